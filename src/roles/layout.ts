/**
 * The data dir when both roles share a host (DEVBOXD_ROLE=all):
 *
 *   <data>/            root's, 0700: the node agent's (boxes, layers, disks, images, its helpers' sockets)
 *   <data>/api/        the API user's, 0700: database, blobs, execution output, SSH host keys, master key
 *   /run/devboxd/      root's, 0711 (its other directories are root's, 0700)
 *   /run/devboxd/d-<hash of data>/           root:<API group>, 0750
 *       node.sock      the agent's socket, 0660 (only root and the API server's group connect)
 *       boxsvc/        the API user's, 0700: the per-box box-services sockets the agent relays boxes to
 *
 * The API server never sees <data> itself: it runs in a mount namespace of its own where its directory and
 * the checkout (read-only) are bound under /run/devboxd/view, so neither the checkout's nor the data dir's
 * parent directories need to be open to it (a clone in root's 0700 home works), and nothing it can write is
 * a path the root agent follows.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../platform/config-error.js';

/** What the API server's own files were called when one root process held the whole data dir. */
const API_ENTRIES = ['devboxd.db', 'devboxd.db-wal', 'devboxd.db-shm', 'blobs', 'executions', 'ssh', 'axons', 'admin-key', 'secret.key', 'runtime'];

/** Where the API server's mount namespace binds its data and the checkout. */
export const VIEW = '/run/devboxd/view';

export interface ApiUser {
  name: string;
  uid: number;
  gid: number;
}

export interface Layout {
  apiDir: string;
  runDir: string;
  agentSocket: string;
  boxServicesDir: string;
}

export function lookupUser(name: string): ApiUser {
  const id = (flag: string) => {
    try {
      return Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    } catch {
      throw new ConfigError(`no system user ${name} for the API server: run scripts/setup.sh (it makes one), or name another with DEVBOXD_API_USER`);
    }
  };
  const user = { name, uid: id('-u'), gid: id('-g') };
  if (user.uid === 0) throw new ConfigError(`DEVBOXD_API_USER ${name} is root: the API server must run unprivileged`);
  return user;
}

export function runDirOf(dataDir: string): string {
  return path.join('/run/devboxd', `d-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`);
}

/** Makes (or upgrades to) the layout above; idempotent, cheap on a warm start. */
export function prepareLayout(dataDir: string, user: ApiUser): Layout {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const apiDir = path.join(dataDir, 'api');
  if (!fs.existsSync(apiDir)) {
    // A data dir of a single-process devboxd: its API files move under api/ once, before anything opens them.
    fs.mkdirSync(`${apiDir}.new`, { recursive: true, mode: 0o700 });
    for (const name of API_ENTRIES) {
      const from = path.join(dataDir, name);
      if (fs.existsSync(from)) fs.renameSync(from, path.join(`${apiDir}.new`, name));
    }
    // Ownership is handed over once, here, not walked at every start.
    chownTree(`${apiDir}.new`, user);
    fs.renameSync(`${apiDir}.new`, apiDir);
  }
  own(apiDir, user.uid, user.gid, 0o700);
  // /run/devboxd: entered, not listed, by the API user (each directory in it guards itself).
  fs.mkdirSync('/run/devboxd', { recursive: true, mode: 0o711 });
  fs.chmodSync('/run/devboxd', 0o711);
  const runDir = runDirOf(dataDir);
  fs.mkdirSync(runDir, { recursive: true, mode: 0o750 });
  own(runDir, 0, user.gid, 0o750);
  const boxServicesDir = path.join(runDir, 'boxsvc');
  fs.mkdirSync(boxServicesDir, { recursive: true, mode: 0o700 });
  own(boxServicesDir, user.uid, user.gid, 0o700);
  fs.mkdirSync(VIEW, { recursive: true, mode: 0o755 });
  return { apiDir, runDir, agentSocket: path.join(runDir, 'node.sock'), boxServicesDir };
}

function own(file: string, uid: number, gid: number, mode: number): void {
  const st = fs.lstatSync(file);
  if (!st.isDirectory()) throw new Error(`${file} must be a directory`);
  if (st.uid !== uid || st.gid !== gid) fs.lchownSync(file, uid, gid);
  if ((st.mode & 0o7777) !== mode) fs.chmodSync(file, mode);
}

function chownTree(dir: string, user: ApiUser): void {
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) fs.lchownSync(path.join(e.parentPath, e.name), user.uid, user.gid);
  fs.lchownSync(dir, user.uid, user.gid);
}

/** Settings naming files the API server reads (its TLS pairs, the CA it checks agents against). */
const API_FILES = ['DEVBOXD_SSH_TLS_CERT', 'DEVBOXD_SSH_TLS_KEY', 'DEVBOXD_CLUSTER_CA', 'DEVBOXD_API_TLS_CERT', 'DEVBOXD_API_TLS_KEY'];

/**
 * The files those settings name, copied (by root, at each start, so a renewed certificate is taken at the next
 * one) into `<data>/api/etc`, the API user's own: the API server neither sees the host's paths nor may read
 * root's files. Answers the settings pointing at the copies as the API server sees them; a file that cannot be
 * read is left named as it was, for the API server to report.
 */
export function handFiles(env: Readonly<Record<string, string | undefined>>, apiDir: string, user: ApiUser): Record<string, string> {
  const dir = path.join(apiDir, 'etc');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  own(dir, user.uid, user.gid, 0o700);
  const moved: Record<string, string> = {};
  for (const name of API_FILES) {
    const from = env[name];
    if (!from) continue;
    const to = path.join(dir, name);
    try {
      fs.copyFileSync(from, `${to}.tmp`);
    } catch {
      continue;
    }
    fs.chownSync(`${to}.tmp`, user.uid, user.gid);
    fs.chmodSync(`${to}.tmp`, 0o600);
    fs.renameSync(`${to}.tmp`, to);
    moved[name] = path.join(VIEW, 'data', 'etc', name);
  }
  return moved;
}
