import type { Readable } from 'node:stream';
import type { StoredObject } from './types.js';

/** How often the objects being read are checked again (a delete on another server sharing the database). */
const RECHECK_MS = 5_000;
/** The longest delay one setTimeout holds; a later expiry is left to the recheck. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The object reads in flight on this server (downloads, mount placements), so a serious service stops
 * serving deleted data promptly: a delete here cuts its object's reads at once, an expiry at its time, and a
 * delete by another server sharing the database within RECHECK_MS. A cut read is destroyed with an error:
 * its HTTP answer ends short of its length, which every client reads as a failed download.
 */
export class OpenReads {
  private readonly byObject = new Map<string, Set<Readable>>();
  private recheck: NodeJS.Timeout | undefined;

  /** `readable(id)`: whether the object may still be read (not deleted, not expired); a failing check keeps it. */
  constructor(private readonly readable: (id: string) => Promise<boolean>) {}

  track(o: StoredObject, stream: Readable): Readable {
    if (stream.destroyed) return stream;
    let reads = this.byObject.get(o.id);
    if (!reads) this.byObject.set(o.id, (reads = new Set()));
    reads.add(stream);
    const wait = o.deleteAfterTimeMs === null ? undefined : o.deleteAfterTimeMs - Date.now();
    const expiry = wait !== undefined && wait <= MAX_TIMER_MS ? setTimeout(() => stream.destroy(gone(o.id, 'expired')), Math.max(0, wait)) : undefined;
    expiry?.unref();
    stream.once('close', () => {
      clearTimeout(expiry);
      reads.delete(stream);
      if (reads.size === 0 && this.byObject.get(o.id) === reads) this.byObject.delete(o.id);
      if (this.byObject.size === 0) this.stopRecheck();
    });
    this.recheck ??= setInterval(() => void this.checkAll(), RECHECK_MS).unref();
    return stream;
  }

  /** Ends every read of the object now (it was deleted). */
  cut(id: string): void {
    for (const s of this.byObject.get(id) ?? []) s.destroy(gone(id, 'deleted'));
  }

  private async checkAll(): Promise<void> {
    for (const id of [...this.byObject.keys()]) {
      if (!(await this.readable(id).catch(() => true))) this.cut(id);
    }
  }

  private stopRecheck(): void {
    clearInterval(this.recheck);
    this.recheck = undefined;
  }
}

const gone = (id: string, why: string) => new Error(`object ${id} was ${why} while it was being read; the read stops here`);
