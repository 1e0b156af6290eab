/**
 * Where a build's context comes from: an archive (tar, gzip-compressed or not) named by an object id. The
 * archive is only read on the host (hashed, streamed); it is unpacked inside the build sandbox, so its
 * links and paths never touch the host's filesystem.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { ERRORS } from '../../platform/errors.js';
import { TarIndex, type ContextEntries } from './context-index.js';

export interface ContextArchive {
  /** Each entry's path and digest: a COPY step's cache key names those it copies. */
  entries: ContextEntries;
  gzip: boolean;
  /** A fresh stream of the archive's bytes (one per COPY). */
  open(): Readable;
}

export interface BuildContextSource {
  /** The archive of the account's object; a 400 naming build_context when there is none. */
  archive(accountId: string, objectId: string): Promise<ContextArchive>;
}

const SAFE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,199}$/;

/**
 * A stand-in until storage objects exist on this server: the archive of object `ID` is the file
 * `<dir>/ID.tar.gz` (or `ID.tar`) an operator or test put there. The objects module replaces it with one
 * reading the object's blob; the build does not change.
 */
export class DirContextSource implements BuildContextSource {
  constructor(private readonly dir: string) {}

  async archive(_accountId: string, objectId: string): Promise<ContextArchive> {
    if (!SAFE.test(objectId)) throw ERRORS.invalid(`build_context.object_id ${JSON.stringify(objectId)} is not an object id`);
    for (const name of [`${objectId}.tar.gz`, `${objectId}.tgz`, `${objectId}.tar`]) {
      const path = join(this.dir, name);
      const fh = await open(path, 'r').catch(() => null);
      if (!fh) continue;
      const head = Buffer.alloc(2);
      await fh.read(head, 0, 2, 0).finally(() => fh.close());
      const gzip = head[0] === 0x1f && head[1] === 0x8b;
      return { entries: await indexArchive(createReadStream(path), gzip), gzip, open: () => createReadStream(path) };
    }
    throw ERRORS.invalid(`build_context.object_id: object ${objectId} not found`);
  }
}

/** Indexes an archive's entries as it streams by (never unpacked, never whole in memory). */
export async function indexArchive(stream: Readable, gzip: boolean): Promise<ContextEntries> {
  const index = new TarIndex();
  try {
    await (gzip ? pipeline(stream, createGunzip(), index) : pipeline(stream, index));
  } catch (err) {
    throw ERRORS.invalid(`build_context: the object is not a tar archive (${(err as Error).message})`);
  }
  return index.entries;
}
