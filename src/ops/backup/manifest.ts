/**
 * `manifest.json`, the last file a backup writes (before the rename that makes the backup): what the backup
 * holds and how to check it. Paths are relative to the backup's directory, whose layout mirrors a data dir:
 * `api/` is the API server's part (`<data>/api` under DEVBOXD_ROLE=all), `layers/` the node agent's layers.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { DigestKind } from './digest.js';

export const FORMAT = 'devboxd-backup';
export const FORMAT_VERSION = 1;
export const MANIFEST = 'manifest.json';

export interface Entry {
  path: string;
  /** file: a file; sqlite: a database copied by SQLite's backup; image: a disk image layer; tree: a layer directory. */
  kind: 'file' | 'sqlite' | 'image' | 'tree';
  bytes: number;
  /** For a tree: how many entries it holds. */
  entries?: number;
  digest: DigestKind;
  sum: string;
}

export interface KeyUse {
  /** The key's id (a hash of the key: it names it, never reveals it). */
  id: string;
  /** Texts sealed under it in the backed-up database (secret values, tokens). */
  sealed: number;
}

export interface Manifest {
  format: typeof FORMAT;
  version: number;
  /** The devboxd version that made it. */
  devboxd: string;
  createdAt: string;
  seconds: number;
  /** The role of the data dir it was made from, and the node (DEVBOXD_NODE_NAME) it ran as. */
  role: 'all' | 'api' | 'node';
  node: string;
  /** The API server's files as owned on the host it came from (a restore gives them to its own API user). */
  apiOwner: { uid: number; gid: number } | null;
  database: { kind: 'sqlite' | 'postgres'; path: string; schema: Record<string, number> } | null;
  blobs: { backend: 'fs'; files: number; bytes: number } | { backend: 's3'; bucket: string; prefix: string; endpoint: string | null; note: string } | null;
  masterKey: { included: boolean; from: string; keys: KeyUse[] };
  layers: string[];
  /** Layers or blobs deleted while the backup ran (the database it holds was copied after they went). */
  vanished: string[];
  entries: Entry[];
}

export function writeManifest(dir: string, m: Manifest): void {
  const file = path.join(dir, MANIFEST);
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeSync(fd, `${JSON.stringify(m, null, 1)}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The manifest of the backup at `dir`, checked for being one this devboxd reads; throws saying why not. */
export function readManifest(dir: string): Manifest {
  const file = path.join(dir, MANIFEST);
  let m: Manifest;
  try {
    m = JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'it has none' : (err as Error).message;
    throw new Error(`${dir} is not a devboxd backup: cannot read ${MANIFEST} (${why}); a backup that did not finish is left as <DEST>.tmp`);
  }
  if (m.format !== FORMAT || !Array.isArray(m.entries)) throw new Error(`${file} is not a devboxd backup manifest`);
  if (m.version > FORMAT_VERSION) throw new Error(`${dir} is a backup of format ${m.version}, newer than this devboxd reads (${FORMAT_VERSION})`);
  for (const e of m.entries) {
    const rel = path.normalize(e.path);
    if (path.isAbsolute(rel) || rel.startsWith('..')) throw new Error(`${file} names a path outside the backup: ${e.path}`);
  }
  return m;
}

/** Syncs a directory, so a rename or a file made in it is on disk. */
export function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
