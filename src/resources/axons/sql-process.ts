import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * How an axon SQL process is started and what it may reach. It runs as plain JavaScript, one script in its
 * runtime directory (sql-runtime.ts): through tsx a process took about 1 s of CPU to start, which every
 * statement stopped at its time limit pays again.
 *
 * When the server runs as root, each process starts in a mount and network namespace of its own (CONFINE):
 * the data directory is an empty tmpfs there, the axons directory is bound at /tmp/axons and the runtime
 * directory (the script and better-sqlite3's native addon, copied out of the checkout) at /tmp/runtime, /tmp,
 * /var/tmp and /dev/shm are otherwise tiny empty tmpfs, there is no network but a loopback that is down; it
 * starts with no_new_privs and no capability but those to change its ids, and changes them itself before it
 * takes a job (sql-child.ts) to a uid of its own in the group that alone may open the axons' files. Ids
 * changed without an exec after leave the process non-dumpable: no other process of that uid (another
 * server's on the host) can trace it or look into its /proc. So it reaches the axons' databases, its runtime
 * directory and what any user of the host may read, never the server's database, keys, blobs or boxes, and
 * nothing of the checkout by path: a clone under a directory its uid may not enter (root's 0700 home) works.
 */

/** The SQL processes' group; their uids follow it. Below the boxes' host ids (BOX_ID_BASE, 1 000 000) and
 * above the usual subordinate-id ranges, so no user or box of the host has them. */
export const SQL_GID = 999_900;
const MAX_SLOTS = 64;

/** Whether the processes get ids of their own (only root can give them). */
export function confined(): boolean {
  return process.getuid?.() === 0;
}

/** The uid and gid of the process in `slot`, or none when the server cannot change them. */
export function sqlIdentity(slot: number): { uid: number; gid: number } | undefined {
  if (!confined()) return undefined;
  if (!Number.isInteger(slot) || slot < 0 || slot >= MAX_SLOTS) throw new Error(`axon SQL process slot ${slot} is out of range`);
  return { uid: SQL_GID + 1 + slot, gid: SQL_GID };
}

/** The path the axons directory has inside a confined process (SQLite opens files by absolute path). */
export const CONFINED_DIR = '/tmp/axons';
/** The path the runtime directory has inside a confined process. */
export const CONFINED_RUNTIME = '/tmp/runtime';
/** The runtime directory's files (sql-runtime.ts): the process's script and better-sqlite3's native addon. */
export const SCRIPT = 'sql-child.cjs';
export const ADDON = 'better_sqlite3.node';

/**
 * Run by `unshare -m -n` as root (or in a user namespace of its own): $1 the axons directory, $2 the data
 * directory, $3 the runtime directory, $4 `ids` (the command keeps the capabilities to change its ids, which
 * it does itself) or `userns` (it keeps none), then the command. The two directories are held open (fds 8 and 9; fd 3 may be the IPC channel) while /tmp
 * is replaced, as the data directory may be under it. The runtime directory is bound as it is: a data
 * directory on a `noexec` mount stays so, and the addon cannot load (the start probe says so).
 */
const CONFINE = `set -eu
axons=$1; data=$2; runtime=$3; shift 3
exec 9<"$axons" 8<"$runtime"
for d in /tmp /var/tmp /dev/shm; do
  if [ -d "$d" ]; then mount -t tmpfs -o size=64k,mode=0755,nosuid,nodev,noexec tmpfs "$d"; fi
done
mkdir ${CONFINED_DIR} ${CONFINED_RUNTIME}
mount --bind /proc/self/fd/9 ${CONFINED_DIR}
mount --bind /proc/self/fd/8 ${CONFINED_RUNTIME}
exec 8<&- 9<&-
if [ -d "$data" ]; then mount -t tmpfs -o size=4k,mode=0700 tmpfs "$data"; fi
cd ${CONFINED_DIR}
mode=$1; shift
if [ "$mode" = ids ]; then exec setpriv --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all,+setuid,+setgid -- "$@"; fi
# A user namespace's own: its groups cannot be set (setgroups is denied there), it has no other ids to take.
exec setpriv --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"
`;

/**
 * Starts a process in `dir` from the runtime directory `runtime` (it sends `{ ready: true }` once it can take
 * jobs); its pid is node's, as unshare, sh and setpriv exec each other. None of the server's environment (its
 * keys) reaches it.
 */
export function spawnSqlProcess(dir: string, runtime: string, slot: number, heapMb: number): ChildProcess {
  const id = sqlIdentity(slot);
  const walled = !id && ownNamespaces();
  const from = id || walled ? CONFINED_RUNTIME : runtime;
  const node = [process.execPath, `--max-old-space-size=${heapMb}`, path.join(from, SCRIPT)];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    DEVBOXD_SQL_IDS: id ? `${id.uid}:${id.gid}` : '',
    DEVBOXD_SQLITE_ADDON: path.join(from, ADDON),
  };
  const stdio: ['ignore', 'ignore', 'pipe', 'ipc'] = ['ignore', 'ignore', 'pipe', 'ipc'];
  const confine = ['sh', '-c', CONFINE, 'sh', dir, path.dirname(dir), runtime, id ? 'ids' : 'userns', ...node];
  if (id) return spawn('unshare', ['-m', '-n', '--propagation', 'private', ...confine], { cwd: '/', env, stdio });
  // Without root (the API server of a split devboxd): the same walls from a user namespace of its own, and a
  // PID namespace besides, so it sees (and can trace or signal) no process of the server's user; it dies
  // with the unshare that forked it.
  if (walled) return spawn('unshare', [...USERNS, '--kill-child=SIGKILL', ...confine], { cwd: '/', env, stdio });
  return spawn(node[0]!, node.slice(1), { cwd: dir, env, stdio });
}

const USERNS = ['--user', '--map-root-user', '--mount', '--propagation', 'private', '--net', '--pid', '--fork', '--mount-proc'];
let namespaces: boolean | undefined;

/** Whether this (unprivileged) process may make the namespaces above: the kernel may forbid it. */
export function ownNamespaces(): boolean {
  namespaces ??= spawnSync('unshare', [...USERNS, 'true'], { stdio: 'ignore', timeout: 5_000 }).status === 0;
  return namespaces;
}

/** The axons directory: root's, open to the SQL processes' group; set-group-id, so the journals the
 * processes make belong to the group too and any of them can roll one back. It must be a real directory
 * (not a symlink), the data directory's child. */
export function prepareSqlDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!confined()) return;
  fs.chownSync(dir, 0, SQL_GID);
  fs.chmodSync(dir, 0o2770);
}

/** Creates an (empty) database file if it is missing, readable and writable by the SQL processes alone. */
export function createSqlFile(file: string): void {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o660);
  try {
    const st = fs.fstatSync(fd);
    if ((st.mode & 0o777) !== 0o660) fs.fchmodSync(fd, 0o660);
    if (confined() && st.gid !== SQL_GID) fs.fchownSync(fd, 0, SQL_GID);
  } finally {
    fs.closeSync(fd);
  }
}

export function removeSqlFiles(file: string): void {
  for (const suffix of ['', '-journal', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
}
