import type { Readable } from 'node:stream';

/**
 * Where large immutable bytes live (execution output later, objects, build contexts): put once from a
 * stream, read back as a stream (whole or a byte range), never held whole in memory. Keys are
 * slash-separated paths (`objects/<account>/<id>`); a put replaces the key whole or not at all. The local
 * files implementation is `fs-blob-store.ts`; an S3 one fits the same port.
 */
export interface BlobStore {
  /** Stores `body` under `key`, replacing what was there only once every byte is durable. */
  put(key: string, body: Readable | AsyncIterable<Uint8Array>, opts?: { signal?: AbortSignal }): Promise<BlobStat>;
  /** The blob's bytes, or bytes `start`..`end` inclusive (as an HTTP range); 404 if the key is unknown. */
  get(key: string, range?: { start: number; end?: number }): Promise<Readable>;
  stat(key: string): Promise<BlobStat | undefined>;
  /** True if the key existed. */
  delete(key: string): Promise<boolean>;
  /** Every blob whose key starts with `prefix`, sorted by key. */
  list(prefix: string): Promise<BlobStat[]>;
}

export interface BlobStat {
  key: string;
  size: number;
  modifiedMs: number;
}

const KEY = /^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;

/** A key is path segments of safe characters: none empty, none starting with a dot (so no `..`, no temp names). */
export function isBlobKey(key: string): boolean {
  return key.length > 0 && key.length <= 1024 && KEY.test(key);
}
