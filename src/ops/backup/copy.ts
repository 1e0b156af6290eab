/**
 * How a backup and a restore move files. Blobs and layers are never rewritten once written (a blob is replaced
 * by a rename, a layer is renamed into place whole and deleted by a rename first), so a hard link holds the
 * very bytes they had: a backup on the data dir's filesystem links them (no bytes move) and copies them
 * otherwise, by the kernel (a reflink where the filesystem has them) with their holes kept. Nothing is read
 * into memory whole. A source that vanishes under the copy (deleted meanwhile) is reported, not an error.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { chmod, copyFile, link, lchown, lstat, mkdir, rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Files each pass handles at once: enough to keep a disk busy, few enough to keep descriptors low. */
export const PARALLEL = 8;

const gone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** Whether `a` and `b` (both existing) are on one filesystem, where a hard link can join them. */
export function sameFilesystem(a: string, b: string): boolean {
  return fs.statSync(a).dev === fs.statSync(b).dev;
}

/** A file with fewer blocks than its length has holes (a box disk image): copied by cp, which keeps them. */
const sparse = (st: fs.Stats) => st.blocks * 512 < st.size;

/**
 * Puts `src` at `dst` (its directory made): a hard link when `linkOk`, else a copy with the owner, mode and
 * times of the source. False when the source is gone.
 */
export async function placeFile(src: string, dst: string, linkOk: boolean): Promise<boolean> {
  await mkdir(path.dirname(dst), { recursive: true, mode: 0o700 });
  if (linkOk) {
    try {
      await link(src, dst);
      return true;
    } catch (err) {
      if (gone(err)) return false;
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    }
  }
  let st: fs.Stats;
  try {
    st = await lstat(src);
    if (sparse(st)) await run('cp', ['--reflink=auto', '--sparse=always', '--preserve=all', '--no-dereference', '--', src, dst]);
    else await copyFile(src, dst, fs.constants.COPYFILE_FICLONE);
  } catch (err) {
    // cp says what went wrong in its own words; a source deleted meanwhile shows as gone either way.
    if (gone(err) || !fs.existsSync(src)) {
      await rm(dst, { force: true });
      return false;
    }
    throw err;
  }
  if (!sparse(st)) await sameMeta(st, dst);
  return true;
}

/** Owner, mode and times of `st` on `dst` (copyFile gives the copy the caller's). */
export async function sameMeta(st: fs.Stats, dst: string): Promise<void> {
  await lchown(dst, st.uid, st.gid);
  await chmod(dst, st.mode & 0o7777);
  await utimes(dst, st.atime, st.mtime);
}

/**
 * Puts the directory tree `src` at `dst` with everything a layer holds (owners, modes, times, xattrs such as
 * overlayfs's opaque marks, whiteout devices, hard links, holes): `cp -a`, linking files when `linkOk`. False
 * when the tree was deleted during the copy (what was copied of it is removed).
 */
export async function placeTree(src: string, dst: string, linkOk: boolean): Promise<boolean> {
  await mkdir(path.dirname(dst), { recursive: true, mode: 0o700 });
  try {
    await run('cp', ['-a', ...(linkOk ? ['-l'] : ['--reflink=auto', '--sparse=always']), '--', src, dst], { maxBuffer: 1 << 24 });
    return true;
  } catch (err) {
    await rm(dst, { recursive: true, force: true });
    if (!fs.existsSync(src)) return false;
    const why = (err as { stderr?: string }).stderr?.trim().split('\n').slice(0, 3).join('; ');
    throw new Error(`copying ${src} failed: ${why || (err as Error).message}`);
  }
}

/** Gives the directories under `dstRoot` the owner and mode of those at the same path under `srcRoot`. */
export async function sameDirs(srcRoot: string, dstRoot: string): Promise<void> {
  const dirs = [''];
  while (dirs.length) {
    const rel = dirs.pop()!;
    const st = await lstat(path.join(srcRoot, rel)).catch(() => undefined);
    if (st?.isDirectory()) {
      await lchown(path.join(dstRoot, rel), st.uid, st.gid);
      await chmod(path.join(dstRoot, rel), st.mode & 0o7777);
    }
    for (const e of fs.readdirSync(path.join(dstRoot, rel), { withFileTypes: true })) if (e.isDirectory()) dirs.push(path.join(rel, e.name));
  }
}

/** Runs `fn` on every item, `PARALLEL` at a time; the first failure fails the whole once the others settle. */
export async function eachLimited<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < items.length && failure === undefined) {
      const item = items[next++]!;
      await fn(item).catch((err) => (failure ??= err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  if (failure !== undefined) throw failure;
}

/** The files under `root` (paths relative to it, `/`-separated), leaving out the top-level names in `skip`. */
export function filesUnder(root: string, skip: readonly string[] = []): string[] {
  if (!fs.existsSync(root)) return [];
  const out: string[] = [];
  const dirs = [''];
  while (dirs.length) {
    const rel = dirs.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch (err) {
      if (gone(err)) continue; // a directory pruned by a delete during the walk
      throw err;
    }
    for (const e of entries) {
      const name = rel ? `${rel}/${e.name}` : e.name;
      if (!rel && skip.includes(e.name)) continue;
      if (e.isDirectory()) dirs.push(name);
      else if (e.isFile()) out.push(name);
    }
  }
  return out.sort();
}
