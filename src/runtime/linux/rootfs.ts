/**
 * The writable layer of a new box, seeded before its overlay is mounted: /etc/hostname, /etc/hosts and,
 * when the image lacks the box user, its passwd/group entries and home directory. Files are written
 * straight into the upper directory with the host ids the box's user namespace maps (BOX_ID_BASE + id).
 */
import { chownSync, copyFileSync, lchownSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOX_ID_BASE } from './paths.js';

/** The user a box's commands run as, resolved against the box's /etc/passwd. */
export interface BoxUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export const ROOT_USER: BoxUser = { name: 'root', uid: 0, gid: 0, home: '/root' };

/** Reads a file from the first of the (newest-first) lower directories that holds it. */
function readLower(lowers: string[], rel: string): string | null {
  for (const dir of lowers) {
    try {
      return readFileSync(join(dir, rel), 'utf8');
    } catch {
      /* not in this layer */
    }
  }
  return null;
}

/** A directory in the upper layer that mirrors a root-owned 0755 directory of the image. */
function ensureDir(path: string, uid = 0, mode = 0o755): void {
  try {
    mkdirSync(path, { mode });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw err;
  }
  chownSync(path, BOX_ID_BASE + uid, BOX_ID_BASE + uid);
}

function writeOwned(path: string, text: string, uid = 0, mode = 0o644): void {
  writeFileSync(path, text, { mode });
  chownSync(path, BOX_ID_BASE + uid, BOX_ID_BASE + uid);
}

/** Keeps a hostname to what sethostname and resolvers accept: [A-Za-z0-9.-], at most 63 bytes. */
export function cleanHostname(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9.-]/g, '-').replace(/^[-.]+/, '').slice(0, 63);
  return cleaned || 'devbox';
}

/** Points the box's resolver at its DNS forwarder (the host end of its link), for any image it boots. */
export function seedResolver(upper: string, nameserver: string): void {
  const etc = join(upper, 'etc');
  ensureDir(etc);
  rmSync(join(etc, 'resolv.conf'), { force: true });
  writeOwned(join(etc, 'resolv.conf'), `nameserver ${nameserver}\noptions timeout:2 attempts:2 edns0\n`);
}

export function seedUpper(upper: string, lowers: string[], hostname: string, want: { name: string; uid: number }): BoxUser {
  const etc = join(upper, 'etc');
  ensureDir(etc);
  writeOwned(join(etc, 'hostname'), `${hostname}\n`);
  writeOwned(join(etc, 'hosts'), `127.0.0.1\tlocalhost\n127.0.1.1\t${hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`);
  if (want.uid === 0 || want.name === 'root') return ROOT_USER;

  const passwd = readLower(lowers, 'etc/passwd') ?? '';
  const lines = passwd.split('\n').filter(Boolean);
  const existing = lines.map((l) => l.split(':')).find((f) => f[0] === want.name && Number(f[2]) === want.uid);
  if (existing) return { name: want.name, uid: want.uid, gid: Number(existing[3]), home: existing[5] || '/' };

  // Add the user (replacing any entry that holds its name or uid), with a group of the same id.
  const home = `/home/${want.name}`;
  const keep = (l: string): boolean => {
    const f = l.split(':');
    return f[0] !== want.name && Number(f[2]) !== want.uid;
  };
  const entry = `${want.name}:x:${want.uid}:${want.uid}:${want.name}:${home}:/bin/bash`;
  writeOwned(join(etc, 'passwd'), [...lines.filter(keep), entry].join('\n') + '\n');
  const groups = (readLower(lowers, 'etc/group') ?? '').split('\n').filter(Boolean);
  writeOwned(join(etc, 'group'), [...groups.filter(keep), `${want.name}:x:${want.uid}:`].join('\n') + '\n');

  ensureDir(join(upper, 'home'));
  const homeDir = join(upper, 'home', want.name);
  ensureDir(homeDir, want.uid);
  const skel = lowers.map((l) => join(l, 'etc/skel')).find((d) => {
    try {
      readdirSync(d);
      return true;
    } catch {
      return false;
    }
  });
  if (skel) {
    for (const e of readdirSync(skel, { withFileTypes: true })) {
      if (!e.isFile()) continue;
      copyFileSync(join(skel, e.name), join(homeDir, e.name));
      lchownSync(join(homeDir, e.name), BOX_ID_BASE + want.uid, BOX_ID_BASE + want.uid);
    }
  }
  return { name: want.name, uid: want.uid, gid: want.uid, home };
}
