/** Filesystem helpers of the driver that shell out to coreutils (faster than walking trees in JS). */
import { execFile } from 'node:child_process';
import { open } from 'node:fs/promises';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** Bytes allocated on disk under `path` (du, one filesystem); 0 when it does not exist. */
export async function diskUsage(path: string): Promise<number> {
  try {
    const { stdout } = await run('du', ['-s', '-B1', '-x', path]);
    return Number.parseInt(stdout, 10) || 0;
  } catch {
    return 0;
  }
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
