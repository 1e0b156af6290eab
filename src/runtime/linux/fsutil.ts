/** Filesystem helpers of the driver. */
import { execFile } from 'node:child_process';
import type { Stats } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

const BATCH = 256;

/**
 * Bytes allocated on disk under `path`, like `du -s -B1 -x` (hard links counted once, one filesystem);
 * 0 when it does not exist. Walked with async fs calls rather than a `du` process: a writable layer is
 * usually small, and forking the server for each of many boxes would cost more than the walk.
 */
export async function diskUsage(path: string): Promise<number> {
  const root = await lstat(path).catch(() => null);
  if (!root) return 0;
  let total = root.blocks * 512;
  if (!root.isDirectory()) return total;
  const seen = new Set<string>();
  const dirs = [path];
  while (dirs.length > 0) {
    const dir = dirs.pop()!;
    const names = await readdir(dir).catch(() => [] as string[]);
    for (let i = 0; i < names.length; i += BATCH) {
      const paths = names.slice(i, i + BATCH).map((n) => join(dir, n));
      const stats = await Promise.all(paths.map((p) => lstat(p).catch(() => null)));
      stats.forEach((st: Stats | null, j) => {
        if (!st) return;
        if (st.isDirectory()) {
          if (st.dev === root.dev) dirs.push(paths[j]!);
          else return;
        } else if (st.nlink > 1) {
          const key = `${st.dev}:${st.ino}`;
          if (seen.has(key)) return;
          seen.add(key);
        }
        total += st.blocks * 512;
      });
    }
  }
  return total;
}

/** Makes a rename or creation inside `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
