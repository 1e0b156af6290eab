import { open, type FileHandle } from 'node:fs/promises';
import type { StreamFiles } from './output-storage.js';

/** What a writer asks of its box's output budget (see OutputBudget). */
export interface BudgetAccount {
  /** `bytes` more are on disk for the box. */
  add(bytes: number): void;
  /** `bytes` left the disk. */
  release(bytes: number): void;
  /** Makes room for a new segment of `bytes` (evicting finished executions' output); false when none was found. */
  makeRoom(bytes: number): Promise<boolean>;
}

/**
 * One output stream of a running execution, written asynchronously in segments (see output-segments.ts).
 * `write` resolves once the bytes are in the file, so a caller that awaits it before reading more of the
 * box's pipe makes a slow disk block the command, never grow memory. Past `maxBytes` (or when the box's
 * budget is short) the oldest tail segment goes; the head stays. A write error (ENOSPC...) stops recording,
 * never the command. Segments are appended to local spool files and sealed into the blob store: the head
 * once it is full (it is kept whatever follows), the kept tail segments when the stream closes (until then
 * more output may drop them, and a flood would copy bytes only to delete them). The spool stays within the
 * same cap as the kept bytes.
 */
export class OutputWriter {
  /** Bytes of the stream so far, dropped ones included: the next byte's offset. */
  bytes = 0;
  /** Bytes dropped from the middle so far. */
  dropped = 0;
  failed: Error | null = null;
  private fh: FileHandle | null = null;
  private seg = 0;
  /** Oldest kept tail segment. */
  private firstTail = 1;
  private closed = false;
  private readonly maxSegments: number;
  /** The head's seal, which runs while the stream goes on. */
  private sealingHead: Promise<void> = Promise.resolve();

  constructor(
    readonly files: StreamFiles,
    readonly segSize: number,
    maxBytes: number,
    private readonly budget: BudgetAccount,
  ) {
    this.maxSegments = Math.max(2, Math.floor(maxBytes / segSize));
  }

  async write(chunk: Buffer): Promise<void> {
    let done = 0;
    try {
      while (done < chunk.length && !this.closed && !this.failed) {
        const room = this.segSize - (this.bytes - this.seg * this.segSize);
        if (!this.fh || room === 0) {
          await this.nextSegment(room === 0);
          continue;
        }
        const len = Math.min(room, chunk.length - done);
        const { bytesWritten } = await this.fh.write(chunk, done, len);
        done += bytesWritten;
        this.bytes += bytesWritten;
        this.budget.add(bytesWritten);
      }
    } catch (err) {
      this.failed = err as Error;
    }
  }

  /**
   * Stops recording (later writes are ignored) and seals the kept segments; resolves once they are sealed.
   * Call once no write is in flight.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fh?.close().catch(() => undefined);
    this.fh = null;
    await this.sealingHead;
    // The head was sealed when the stream outgrew it; a stream that never did is all head.
    for (const n of this.keptSegments()) if (n > 0 || this.seg === 0) await this.seal(n);
  }

  /** Numbers of the segments this writer keeps. */
  keptSegments(): number[] {
    if (this.bytes === 0) return [];
    const kept = [0];
    for (let n = Math.max(1, this.firstTail); n <= this.seg; n++) kept.push(n);
    return kept;
  }

  private seal(n: number): Promise<void> {
    return this.files.seal(n).catch(() => {
      // The spool file stays and readers find it there; a restart seals it (OutputStorage.sealLeftovers).
    });
  }

  private async nextSegment(advance: boolean): Promise<void> {
    if (advance) {
      await this.fh?.close();
      this.fh = null;
      if (this.seg === 0) this.sealingHead = this.seal(0);
      this.seg++;
      // Within the cap, or when the box's budget is short: the oldest tail segment makes way.
      const kept = this.seg - this.firstTail + 1;
      if (kept >= this.maxSegments || !(await this.budget.makeRoom(this.segSize))) await this.dropOldest();
    }
    const fh = await open(this.files.spoolPath(this.seg), 'w', 0o600);
    if (this.closed) await fh.close();
    else this.fh = fh;
  }

  private async dropOldest(): Promise<void> {
    if (this.firstTail >= this.seg) return; // only the head and the segment being started: nothing to drop
    await this.files.drop(this.firstTail);
    this.firstTail++;
    this.dropped += this.segSize;
    this.budget.release(this.segSize);
  }
}
