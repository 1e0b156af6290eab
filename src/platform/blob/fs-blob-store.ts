import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ERRORS } from '../errors.js';
import { isBlobKey, type BlobStat, type BlobStore } from './types.js';

const TMP = '.tmp';

/**
 * Blobs as files under one directory: `<root>/<key>`. A put streams into `<root>/.tmp/<random>`, fsyncs it,
 * renames it over the key and fsyncs the directory, so a reader or a crash sees the old blob or the new one,
 * never a part. Temp files a crash left behind are removed at `open`.
 */
export class FsBlobStore implements BlobStore {
  private constructor(private readonly root: string) {}

  static async open(root: string): Promise<FsBlobStore> {
    await rm(path.join(root, TMP), { recursive: true, force: true });
    await mkdir(path.join(root, TMP), { recursive: true, mode: 0o700 });
    return new FsBlobStore(root);
  }

  async put(key: string, body: Readable | AsyncIterable<Uint8Array>, opts: { signal?: AbortSignal } = {}): Promise<BlobStat> {
    const file = this.pathOf(key);
    const tmp = path.join(this.root, TMP, randomBytes(12).toString('hex'));
    const out = createWriteStream(tmp, { mode: 0o600 });
    try {
      await pipeline(body, out, { signal: opts.signal });
      await fsync(tmp);
      for (let tries = 0; ; tries++) {
        try {
          await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
          await rename(tmp, file);
          break;
        } catch (err) {
          // A delete pruned a directory on the way, during the mkdir (which made a parent, then found it gone)
          // or between the mkdir and the rename: make them again.
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || tries >= 5) throw err;
        }
      }
      await fsync(path.dirname(file));
    } catch (err) {
      // A body that fails at once can end the pipeline before the stream has opened its file: the unlink
      // waits for the stream's close, which comes after that open, or it would leave the file behind.
      if (!out.closed) await once(out, 'close').catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    return (await this.stat(key))!;
  }

  async get(key: string, range?: { start: number; end?: number }): Promise<Readable> {
    const file = this.pathOf(key);
    // Opened before the stream is handed out: an unknown key is a 404 now, not a stream error later.
    const fh = await open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' || err.code === 'EISDIR' ? ERRORS.notFound('blob', key) : err;
    });
    if (range && (range.start < 0 || (range.end !== undefined && range.end < range.start))) {
      await fh.close();
      throw ERRORS.invalid(`range ${range.start}-${range.end ?? ''} is not a valid byte range`);
    }
    return createReadStream('', { fd: fh, start: range?.start, end: range?.end });
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    const st = await stat(this.pathOf(key)).catch(() => undefined);
    return st?.isFile() ? { key, size: st.size, modifiedMs: st.mtimeMs } : undefined;
  }

  /** Removes the key, then the directories it leaves empty (a key space like `executions/<box>/…` does not leak them). */
  async delete(key: string): Promise<boolean> {
    const file = this.pathOf(key);
    try {
      await unlink(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR') return false;
      throw err;
    }
    for (let dir = path.dirname(file); dir !== this.root && dir.startsWith(this.root); dir = path.dirname(dir)) {
      // rmdir refuses a directory that is not empty: that is where pruning stops.
      if (
        !(await rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
    }
    return true;
  }

  async list(prefix: string): Promise<BlobStat[]> {
    // Walk only the deepest directory the prefix names whole; filter the rest of it by name.
    const slash = prefix.lastIndexOf('/');
    const dir = slash < 0 ? '' : prefix.slice(0, slash);
    if (dir && !isBlobKey(dir)) return [];
    const entries = await readdir(path.join(this.root, dir), { recursive: true, withFileTypes: true }).catch(() => []);
    const out: BlobStat[] = [];
    for (const e of entries) {
      if (!e.isFile()) continue;
      const key = path
        .relative(this.root, path.join(e.parentPath ?? e.path, e.name))
        .split(path.sep)
        .join('/');
      if (!key.startsWith(prefix) || !isBlobKey(key)) continue;
      const st = await this.stat(key);
      if (st) out.push(st);
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private pathOf(key: string): string {
    if (!isBlobKey(key)) throw ERRORS.invalid(`blob key "${key}" is not a valid key (path segments of letters, digits, ".", "_", "-")`);
    return path.join(this.root, ...key.split('/'));
  }
}

async function fsync(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
