/**
 * A pool of box disks formatted and mounted ahead of need, per size: a create takes one (a symlink
 * `boxes/<id>/disk` → `disks/pool/<slot>`) instead of paying for image, loop device and mount on its own
 * path (~5–10 ms on this machine kind). Each size a box asked for keeps up to POOL_PER_SIZE disks ready,
 * topped up in the background in batches (one helper process for several disks); the least recently asked sizes past POOL_SIZES are dropped. A size with nothing ready
 * is attached on the spot, in batches: a burst of creates costs a few helper processes, not one each.
 *
 * A slot is `disks/pool/<slot>/` (the mount point, holding `upper` and `work`) next to `<slot>.img`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DiskTemplates, attachDisks, detachDisk, detachDisks, isMountPoint } from './disk.js';
import type { RuntimeLogger } from './logger.js';

const POOL_PER_SIZE = 8;
/** A size is topped up once it has this many or fewer ready: one helper process per few creates. */
const LOW_WATER = 4;
/** The top-up starts a moment after the take, so its fork does not land inside the create that took. */
const REFILL_DELAY_MS = 25;
const POOL_SIZES = 4;
/** Disks one helper process attaches at most, and helper processes at once (one per core here). */
const BATCH = 16;
const BATCHES = 2;

export interface Slot {
  /** Mount point of the disk; the box's writable layer is `<dir>/upper`. */
  dir: string;
  image: string;
  /** MAJOR:MINOR of its loop device. */
  dev: string;
}

export class DiskPool {
  private readonly templates: DiskTemplates;
  /** Ready disks by size, in the order sizes were last asked for (a Map keeps insertion order). */
  private readonly ready = new Map<number, Slot[]>();
  private filling: Promise<void> | undefined;
  private closed = false;
  /** Disks wanted now, attached in batches (a burst of creates costs a few processes, not one each). */
  private readonly wanted: { bytes: number; resolve: (s: Slot) => void; reject: (e: Error) => void }[] = [];
  private batches = 0;

  private readonly poolDir: string;

  constructor(
    poolDir: string,
    templateDir: string,
    private readonly log: RuntimeLogger,
  ) {
    // Absolute, as the box links resolve to: sweep() compares the two.
    this.poolDir = resolve(poolDir);
    this.templates = new DiskTemplates(templateDir);
  }

  /** A mounted disk of `bytes` for a box, from the pool when one is ready. */
  async take(bytes: number): Promise<Slot> {
    const list = this.ready.get(bytes) ?? [];
    this.ready.delete(bytes);
    this.ready.set(bytes, list);
    const slot = list.shift() ?? (await this.attach(bytes));
    if (list.length <= LOW_WATER) setTimeout(() => this.refill(), REFILL_DELAY_MS).unref();
    return slot;
  }

  private attach(bytes: number): Promise<Slot> {
    return new Promise((resolve, reject) => {
      this.wanted.push({ bytes, resolve, reject });
      // After the current tick: disks asked for together go to one helper process.
      queueMicrotask(() => this.startBatch());
    });
  }

  private startBatch(): void {
    if (this.batches >= BATCHES || this.wanted.length === 0) return;
    const bytes = this.wanted[0]!.bytes;
    const batch: typeof this.wanted = [];
    for (let i = 0; i < this.wanted.length && batch.length < BATCH; ) {
      if (this.wanted[i]!.bytes === bytes) batch.push(...this.wanted.splice(i, 1));
      else i++;
    }
    this.batches++;
    void this.attachBatch(bytes, batch).finally(() => {
      this.batches--;
      this.startBatch();
    });
    this.startBatch();
  }

  private async attachBatch(bytes: number, batch: typeof this.wanted): Promise<void> {
    let template: string;
    try {
      template = await this.templates.get(bytes);
      mkdirSync(this.poolDir, { recursive: true, mode: 0o700 });
    } catch (err) {
      for (const w of batch) w.reject(err as Error);
      return;
    }
    const pairs = batch.map(() => {
      const dir = join(this.poolDir, `${bytes / 1024 ** 3}g-${randomBytes(6).toString('hex')}`);
      mkdirSync(dir);
      return { dir, image: `${dir}.img` };
    });
    const devs = await attachDisks(template, pairs);
    for (const [i, w] of batch.entries()) {
      const { dir, image } = pairs[i]!;
      const dev = devs[i]!;
      try {
        if (dev instanceof Error) throw dev;
        for (const d of ['upper', 'work']) mkdirSync(join(dir, d));
        w.resolve({ dir, image, dev });
      } catch (err) {
        await releaseSlot(dir).catch(() => undefined);
        w.reject(err as Error);
      }
    }
  }

  /** Tops every pooled size up, one disk at a time, off the create path. */
  private refill(): void {
    this.filling ??= (async () => {
      while ([...this.ready.keys()].length > POOL_SIZES) {
        const [oldest, slots] = this.ready.entries().next().value as [number, Slot[]];
        this.ready.delete(oldest);
        await releaseSlots(slots.map((s) => s.dir)).catch(() => undefined);
      }
      for (;;) {
        const short = [...this.ready.entries()].find(([, slots]) => slots.length < POOL_PER_SIZE);
        if (!short || this.closed) break;
        const [bytes, slots] = short;
        const made = await Promise.allSettled(Array.from({ length: POOL_PER_SIZE - slots.length }, () => this.attach(bytes)));
        for (const r of made) {
          if (r.status === 'rejected') this.log.warn({ err: (r.reason as Error).message }, 'could not prepare a box disk');
          else if (this.closed || this.ready.get(bytes) !== slots) await releaseSlot(r.value.dir);
          else slots.push(r.value);
        }
        if (made.some((r) => r.status === 'rejected')) break;
      }
    })().finally(() => (this.filling = undefined));
  }

  /**
   * Removes slots no box links to: the ready ones of an earlier run, and one a crash left between take
   * and link. `linked` are the slot directories boxes point at.
   */
  async sweep(linked: Set<string>): Promise<void> {
    let names: string[];
    try {
      names = readdirSync(this.poolDir);
    } catch {
      return;
    }
    const stale = [...new Set(names.map((n) => join(this.poolDir, n.replace(/\.img$/, ''))))].filter((dir) => !linked.has(dir));
    await releaseSlots(stale).catch(() => undefined);
  }

  /** Unmounts and deletes the ready disks (the server is stopping). */
  async close(): Promise<void> {
    this.closed = true;
    await this.filling;
    const dirs = [...this.ready.values()].flatMap((slots) => slots.splice(0).map((s) => s.dir));
    await releaseSlots(dirs).catch(() => undefined);
  }
}

/** The slot a box's `disk` symlink points at, or null for a box without one. */
export function slotOf(link: string): string | null {
  try {
    return resolve(dirname(link), readlinkSync(link));
  } catch {
    return null;
  }
}

/** Unmounts a slot's disk and deletes its image and mount point. */
export async function releaseSlot(dir: string): Promise<void> {
  await detachDisk(dir);
  removeSlot(dir);
}

/**
 * Releases several slots with one unmount helper. A slot whose unmount failed keeps its files (a busy disk
 * is detached lazily, so that is rare); the others go.
 */
async function releaseSlots(dirs: string[]): Promise<void> {
  if (!dirs.length) return;
  const failed = await detachDisks(dirs).then(
    () => false,
    () => true,
  );
  for (const dir of dirs) if (!(failed && isMountPoint(dir))) removeSlot(dir);
}

function removeSlot(dir: string): void {
  rmSync(`${dir}.img`, { force: true });
  rmSync(dir, { recursive: true, force: true });
}
