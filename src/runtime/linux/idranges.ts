/**
 * Host id ranges of boxes. Each box's user namespace maps its ids 0..65535 to a range of host ids of its
 * own, so per-user kernel counts (inotify instances, mqueue bytes, RLIMIT_NPROC) are never shared with
 * the host or another box. Ranges are host-wide (every devboxd server on the machine draws from one
 * pool): a range is claimed by a symlink `<dir>/<slot>` naming the box's directory, created atomically,
 * and is free again once removed or once the directory it names is gone (a box torn down by a server
 * that died, or whose data dir was deleted).
 *
 * No range is ever written to disk: layers keep the canonical ids (BOX_ID_BASE + id) and a box sees them
 * through idmapped mounts (native/idmap.c), so a range can serve a new box as soon as the old one ends,
 * and a snapshot's layers serve boxes of any range.
 */
import { randomInt } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readlinkSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from '../driver.js';
import { BOX_ID_BASE } from './paths.js';

/** Ids per box (native/common.h BOX_ID_COUNT). */
const RANGE = 65_536;
/** Slot 0 is the canonical range (owners on disk), never a box's; the last slot ends below 2^31. */
const SLOTS = 30_000;
const PROBES = 256;

export const DEFAULT_RANGE_DIR = '/run/devboxd/id-ranges';

export function rangeBase(slot: number): number {
  return BOX_ID_BASE + slot * RANGE;
}

export class IdRanges {
  constructor(readonly dir: string = DEFAULT_RANGE_DIR) {}

  /** Claims a free range for the box in `boxDir`; returns its first host id. */
  claim(boxDir: string): number {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (let i = 0; i < PROBES; i++) {
      const slot = 1 + randomInt(SLOTS);
      if (this.tryClaim(slot, boxDir)) return rangeBase(slot);
    }
    // A nearly full pool: look at every slot once.
    for (let slot = 1; slot <= SLOTS; slot++) if (this.tryClaim(slot, boxDir)) return rangeBase(slot);
    throw new SandboxError('capacity', `no free host id range for a new box (${SLOTS} in use)`);
  }

  /** Frees the range `base` if `boxDir` holds it. */
  release(base: number, boxDir: string): void {
    const slot = (base - BOX_ID_BASE) / RANGE;
    if (!Number.isInteger(slot) || slot < 1 || slot > SLOTS) return;
    const path = join(this.dir, String(slot));
    try {
      if (readlinkSync(path) === boxDir) unlinkSync(path);
    } catch {
      /* not held */
    }
  }

  private tryClaim(slot: number, boxDir: string): boolean {
    const path = join(this.dir, String(slot));
    try {
      symlinkSync(boxDir, path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!this.reclaim(path)) return false;
    try {
      symlinkSync(boxDir, path);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Removes a claim whose box directory is gone. Another server may reclaim the same slot at once: the
   * claim is moved aside first (one mover wins), and put back if what was moved turns out to be live.
   */
  private reclaim(path: string): boolean {
    let target: string;
    try {
      target = readlinkSync(path);
    } catch {
      return true; // released meanwhile
    }
    if (existsSync(target)) return false;
    const aside = `${path}.stale-${process.pid}-${randomInt(1 << 30)}`;
    try {
      renameSync(path, aside);
    } catch {
      return false;
    }
    if (existsSync(readlinkSync(aside))) {
      // A fresh claim slipped in between the check and the move: give it back.
      try {
        linkSync(aside, path);
      } catch {
        /* the slot was claimed again: that claim stands */
      }
      unlinkSync(aside);
      return false;
    }
    unlinkSync(aside);
    return true;
  }
}
