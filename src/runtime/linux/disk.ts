/**
 * Box disks: the writable layer of a box lives on an ext4 filesystem of its own, in a sparse image file
 * (`boxes/<id>/disk.img`) loop-mounted on `boxes/<id>/disk`. Its size is the box's disk quota and its inode
 * count is fixed at INODES_PER_GIB, so the kernel refuses writes and new files past them with ENOSPC at the
 * moment they are made (files deleted but still open included), and `df` in the box shows the box's own
 * size. The image holds only what the box wrote: a fresh one is a copy of a formatted template (~300 KiB of
 * allocated blocks; one template per size, made once with mkfs) and blocks the box frees are punched out
 * of it again (discard).
 *
 * A suspended box's image becomes an image layer (`layers/<id>.img`, a rename), mounted read-only on
 * `layers/.mnt/<id>` while boxes stand on it.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './fsutil.js';
import { native } from './paths.js';

const GiB = 1024 ** 3;
/** Inodes per GiB of disk (64 Ki: one per 16 KiB on average); a 1 GiB box holds at most 65 536 files. */
export const INODES_PER_GIB = 65_536;
/** ext4 inode size; the inode tables are added to the image so that the data capacity is the quota. */
const INODE_SIZE = 256;

/** Inode count of a disk of `bytes` (at least one block group's worth). */
export function inodesFor(bytes: number): number {
  return Math.max(8192, Math.round((bytes / GiB) * INODES_PER_GIB));
}

export class DiskTemplates {
  private readonly made = new Map<number, Promise<string>>();

  constructor(private readonly dir: string) {}

  /** The formatted template image for a disk of `bytes`, made on first use. */
  get(bytes: number): Promise<string> {
    let p = this.made.get(bytes);
    if (!p) {
      p = this.format(bytes);
      this.made.set(bytes, p);
      p.catch(() => this.made.delete(bytes));
    }
    return p;
  }

  private async format(bytes: number): Promise<string> {
    const inodes = inodesFor(bytes);
    const path = join(this.dir, `ext4-${bytes}-${inodes}.img`);
    if (existsSync(path)) return path;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${path}.tmp-${process.pid}`;
    rmSync(tmp, { force: true });
    // Sized so that the data blocks alone make the quota: ext4 counts its inode tables as overhead.
    const size = Math.ceil((bytes + inodes * INODE_SIZE) / 4096) * 4096;
    await run('truncate', ['-s', String(size), tmp]);
    chmodSync(tmp, 0o600); // every box disk is copied from it: root's alone, like the disks themselves
    // No journal: a box's disk never outlives a host crash (the box is gone then), and suspend unmounts it
    // cleanly first. No reserved blocks, no resize inode: the whole size is the box's.
    await run('mkfs.ext4', [
      '-q',
      '-F',
      '-b',
      '4096',
      '-m',
      '0',
      '-I',
      String(INODE_SIZE),
      '-N',
      String(inodes),
      '-O',
      '^has_journal,^resize_inode',
      '-E',
      'lazy_itable_init=1,nodiscard',
      tmp,
    ]);
    renameSync(tmp, path);
    return path;
  }
}

/**
 * Creates each image from `template` and mounts it on its dir, all in one helper process; resolves with,
 * per pair, the loop device's MAJOR:MINOR or an Error.
 */
export function attachDisks(template: string, pairs: { image: string; dir: string }[]): Promise<(string | Error)[]> {
  const args = ['attach', '-t', template, ...pairs.flatMap((p) => [p.image, p.dir])];
  return new Promise((resolve) => {
    execFile(native.boxdisk, args, (err, stdout, stderr) => {
      const lines = stdout.split('\n');
      resolve(
        pairs.map((_, i) => {
          const line = lines[i];
          if (line && !line.startsWith('error: ')) return line.trim();
          return new Error(line?.slice(7) || stderr.trim() || err?.message || 'boxdisk failed');
        }),
      );
    });
  });
}

/** Mounts an image layer read-only on `dir`. */
export async function attachLayer(image: string, dir: string): Promise<void> {
  await run(native.boxdisk, ['attach', '-r', image, dir]);
}

/** Unmounts `dir` (lazily when busy); nothing mounted there is fine. */
export async function detachDisk(dir: string): Promise<void> {
  await detachDisks([dir]);
}

/** Unmounts each of `dirs` (lazily when busy) in one helper process: a pool's worth at a stop costs one, not eight. */
export async function detachDisks(dirs: string[]): Promise<void> {
  const present = dirs.filter((d) => existsSync(d));
  if (present.length) await run(native.boxdisk, ['detach', ...present]);
}

/** True when `dir` is the root of a mount (its device differs from its parent's). */
export function isMountPoint(dir: string): boolean {
  try {
    return statSync(dir).dev !== statSync(join(dir, '..')).dev;
  } catch {
    return false;
  }
}

/** Bytes in use on the filesystem holding `dir` (the box's disk): a statfs, no walk. */
export async function usedBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return (s.blocks - s.bfree) * s.bsize;
}

/** Mount points of image layers that are mounted (for unmounting once no box is left). */
export function mountedLayers(mntDir: string): string[] {
  try {
    return readdirSync(mntDir)
      .map((n) => join(mntDir, n))
      .filter(isMountPoint);
  } catch {
    return [];
  }
}
