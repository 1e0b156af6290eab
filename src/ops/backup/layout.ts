/**
 * What of a data dir a backup takes, and where a restore puts it. Under DEVBOXD_ROLE=all the API server's files
 * are `<data>/api` (the API user's) and the node agent's `<data>` (root's); `api` alone keeps only the first,
 * `node` only the second. A backup mirrors that: `api/` and `layers/`.
 *
 * Taken: the database, the blobs (local store), the axons' SQL databases, execution output still being
 * written (`executions/`), the SSH host keys (`ssh/`: the server keeps its identity), and every layer (the
 * snapshots', the blueprints', pulled images', suspended boxes' disks). Left out: the master key (unless
 * asked for), the admin key file (a credential; its hash is in the database, so the key still works), what a
 * start makes again (`etc/`, `runtime/`, locks and sockets, the disk templates and pool, the base image cache)
 * and the boxes' sandboxes (`boxes/`: processes and mounted disks, not files to copy).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.js';

export type Role = 'all' | 'api' | 'node';

export interface Places {
  role: Role;
  /** The API server's directory (database, blobs, keys), or null where this role keeps none. */
  apiDir: string | null;
  /** The node agent's directory (its `layers/`), or null where this role keeps none. */
  nodeDir: string | null;
}

/** The API server's entries a backup takes as they are (besides the database, blobs and axons). */
export const API_COPIED = ['executions', 'ssh'];
/** The database file (SQLite) and the dump (PostgreSQL) inside a backup's `api/`. */
export const SQLITE_FILE = 'devboxd.db';
export const PG_DUMP = 'devboxd.pgdump';
export const BLOBS = 'blobs';
/** The master key file (platform/sealing/master-key.ts). */
export const KEY_FILE = 'secret.key';
export const AXONS = 'axons';
export const LAYERS = 'layers';

/** Where a server with these settings keeps its parts now (an `all` data dir from before roles has no `api/`). */
export function sourcesOf(c: Config): Places {
  const role = c.roles.role;
  if (role === 'node') return { role, apiDir: null, nodeDir: c.dataDir };
  if (role === 'api') return { role, apiDir: c.dataDir, nodeDir: null };
  const api = path.join(c.dataDir, 'api');
  return { role, apiDir: fs.existsSync(api) ? api : c.dataDir, nodeDir: c.dataDir };
}

/** Where a restore puts the parts for a server with these settings, under `root` (the data dir being made). */
export function targetsOf(role: Role, root: string): Places {
  if (role === 'node') return { role, apiDir: null, nodeDir: root };
  if (role === 'api') return { role, apiDir: root, nodeDir: null };
  return { role, apiDir: path.join(root, 'api'), nodeDir: root };
}

/** Layers are a directory or a disk image (`<id>.img`); names starting with `.` are half-made or half-deleted. */
export function layerNames(nodeDir: string): string[] {
  const dir = path.join(nodeDir, LAYERS);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => !n.startsWith('.'))
    .sort();
}

/** The axons' SQL databases (their journals are SQLite's, not files of their own to copy). */
export function axonFiles(apiDir: string): string[] {
  const dir = path.join(apiDir, AXONS);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => !/-(journal|wal|shm)$/.test(n))
    .sort();
}

/** Whether `inner` is `outer` or below it. */
export function within(inner: string, outer: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
