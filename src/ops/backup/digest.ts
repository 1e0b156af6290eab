/**
 * The checksums a backup's manifest records and a restore checks, each file read a block at a time:
 * - `sha256`: of a file's bytes (what `sha256sum` prints), for the database, blobs and small files;
 * - `sha256-chunks`: of a disk image (a layer `<id>.img`, mostly holes: a 20 GiB disk holding 100 MiB): the
 *   sha256 of each 1 MiB chunk that is not all zeros, with its index, then the length. It depends on the bytes
 *   only (not on where the filesystem keeps holes), and only the chunks `filefrag` shows data in are read, so
 *   the holes cost nothing;
 * - `sha256-tree`: of a layer directory: a line per entry in path order (type, mode, owner, and the content's
 *   sha256, a link's target or a device's number).
 */
import { execFile } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { hashInWorker } from './hash-pool.js';

const run = promisify(execFile);

export type DigestKind = 'sha256' | 'sha256-chunks' | 'sha256-tree';

/** A file's sha256, hashed in a worker (hash-pool.ts): every core hashes. */
export function sha256File(file: string): Promise<string> {
  return hashInWorker({ kind: 'sha256', file });
}

const CHUNK = 1 << 20;

/** Byte ranges [start, end) that hold data, from the filesystem's extent map; the whole file where it has none. */
async function dataRanges(file: string, size: number): Promise<[number, number][]> {
  try {
    const { stdout } = await run('filefrag', ['-b1', '-e', file], { maxBuffer: 1 << 26 });
    const ranges: [number, number][] = [];
    for (const m of stdout.matchAll(/^\s*\d+:\s*(\d+)\.\.\s*(\d+):/gm)) ranges.push([Number(m[1]), Number(m[2]) + 1]);
    if (ranges.length || (await lstat(file)).blocks === 0) return ranges;
  } catch {
    /* no extent map here (tmpfs, some network filesystems): read it all */
  }
  return size ? [[0, size]] : [];
}

export async function chunkDigest(file: string): Promise<string> {
  const size = (await lstat(file)).size;
  const chunks = new Set<number>();
  for (const [a, b] of await dataRanges(file, size)) for (let i = Math.floor(a / CHUNK); i * CHUNK < Math.min(b, size); i++) chunks.add(i);
  return hashInWorker({ kind: 'chunks', file, chunks: [...chunks].sort((x, y) => x - y), size, chunk: CHUNK });
}

/**
 * The tree digest, with how many entries and file bytes the tree holds. The walk comes first and the files are
 * hashed meanwhile, on every core; the lines go in path order once their hashes are in.
 */
export async function treeDigest(root: string): Promise<{ digest: string; entries: number; bytes: number }> {
  const found: { rel: string; st: fs.Stats; tail: Promise<string> }[] = [];
  const contents = new Map<string, Promise<string>>(); // hard links: one read per inode
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(path.join(root, rel))).sort()) {
      const relName = rel ? `${rel}/${name}` : name;
      const file = path.join(root, relName);
      const st = await lstat(file);
      let tail: Promise<string>;
      if (st.isFile()) {
        const key = `${st.dev}:${st.ino}`;
        let sum = contents.get(key);
        if (sum === undefined) contents.set(key, (sum = sha256File(file)));
        tail = sum.then((h) => `\0${st.size}\0${h}\n`);
      } else if (st.isSymbolicLink()) tail = readlink(file).then((target) => `\0${target}\n`);
      else if (st.isCharacterDevice() || st.isBlockDevice()) tail = Promise.resolve(`\0${st.rdev}\n`);
      else tail = Promise.resolve('\n');
      tail.catch(() => undefined); // awaited below, in order; a failure is reported there
      found.push({ rel: relName, st, tail });
      if (st.isDirectory()) await walk(relName);
    }
  };
  await walk('');
  const hash = createHash('sha256');
  let bytes = 0;
  for (const f of found) {
    line(hash, f.rel, f.st);
    hash.update(await f.tail);
    if (f.st.isFile()) bytes += f.st.size;
  }
  return { digest: hash.digest('hex'), entries: found.length, bytes };
}

function line(hash: Hash, rel: string, st: fs.Stats): void {
  const type = st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : st.isCharacterDevice() ? 'c' : st.isBlockDevice() ? 'b' : 'o';
  hash.update(`${rel}\0${type}\0${(st.mode & 0o7777).toString(8)}\0${st.uid}\0${st.gid}`);
}

/** The digest of `file` of the kind the manifest names. */
export async function digestOf(kind: DigestKind, file: string): Promise<string> {
  if (kind === 'sha256') return sha256File(file);
  if (kind === 'sha256-chunks') return chunkDigest(file);
  return (await treeDigest(file)).digest;
}
