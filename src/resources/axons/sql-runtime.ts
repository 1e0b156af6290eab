import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from '../../lib/bundle.js';
import { prepareRuntimeDir, type RuntimeFile } from '../../lib/runtime-dir.js';
import { ADDON, SCRIPT, SQL_GID, confined, sqlIdentity } from './sql-process.js';

/**
 * The SQL processes' runtime directory (`<data>/runtime/axon-sql`, lib/runtime-dir.ts): their script (the
 * child and better-sqlite3's JavaScript, bundled with esbuild) and better-sqlite3's native addon, copied out
 * of the checkout at each start when their content changed; and the check, at start, that the processes'
 * identity can use it, so a server that cannot run axon SQL says why in its log before any query.
 */

// Beside this module: the TypeScript source, or its compiled form when the server runs compiled (dist/).
const CHILD = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './sql-child.ts' : './sql-child.js', import.meta.url));
// better-sqlite3's own layout: its package root holds build/Release/better_sqlite3.node (what `bindings` finds).
const SQLITE_ADDON = path.join(path.dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'build/Release/better_sqlite3.node');

export function sqlRuntimeDir(dataDir: string): string {
  return path.join(dataDir, 'runtime', 'axon-sql');
}

/** Makes `dir` hold the processes' current files (what changed is written); returns the names written. */
export function prepareSqlRuntime(dir: string): string[] {
  const files: RuntimeFile[] = [
    { name: SCRIPT, content: bundle(CHILD) },
    { name: ADDON, content: { file: SQLITE_ADDON } },
  ];
  return prepareRuntimeDir(dir, files, confined() ? SQL_GID : undefined);
}

export interface StartProblem {
  /** What the processes' identity could not use, on the host; absent when the namespace itself failed. */
  path?: string;
  uid: number;
  gid: number;
  message: string;
}

/**
 * Run as the first SQL process's uid and gid (no other group), with the runtime directory on fd 3
 * and the axons directory on fd 4, opened by the server: a path through /proc/self/fd/N goes on from the
 * directory itself, not through its parents, as a path through a SQL process's bind mounts does
 * (sql-process.ts). `r:<name>` must be readable in the runtime directory, `w:` the axons directory writable,
 * and the runtime directory's mount must allow mapping code (`x:`; a data directory on a noexec mount does
 * not, and a bind mount keeps the flags of what it binds). Prints what fails.
 */
const PROBE = `for a; do
  case $a in
    r:*) [ -r "/proc/self/fd/3/\${a#r:}" ] || echo "$a" ;;
    w:) [ -w /proc/self/fd/4 ] || echo "$a" ;;
  esac
done
while read -r k v; do [ "$k" = mnt_id: ] && mnt=$v; done < /proc/self/fdinfo/3
while read -r id _ _ _ _ opts _; do
  if [ "$id" = "$mnt" ]; then case ",$opts," in *,noexec,*) echo x: ;; esac; fi
done < /proc/self/mountinfo
`;

/**
 * Checks that the first SQL process's identity can read the runtime directory `runtime` and write the axons
 * directory `dir` (a server running as root only; otherwise the processes are the server's user). Resolves
 * to the first problem, or null; `proc` is the probe (one sh, about 10 ms of CPU), killed on close.
 */
export function probeSqlRuntime(dir: string, runtime: string): { proc: ChildProcess; problem: Promise<StartProblem | null> } {
  // Confined processes take ids of their own; unconfined ones (an API server without root) run as this one.
  const own = sqlIdentity(0);
  const { uid, gid } = own ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const host: Record<string, string> = {
    [`r:${SCRIPT}`]: path.join(runtime, SCRIPT),
    [`r:${ADDON}`]: path.join(runtime, ADDON),
    'w:': dir,
    'x:': path.join(runtime, ADDON),
  };
  const verbs: Record<string, string> = { r: 'cannot read', w: 'cannot write', x: 'cannot load code from' };
  const fds = [runtime, dir].map((d) => fs.openSync(d, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY));
  let proc: ChildProcess;
  try {
    // node sets the ids (and drops every supplementary group) between its fork and the exec of sh.
    const args = ['-c', PROBE, 'sh', `r:${SCRIPT}`, `r:${ADDON}`, 'w:'];
    proc = spawn('/bin/sh', args, { cwd: '/', env: {}, ...(own ? { uid, gid } : {}), stdio: ['ignore', 'pipe', 'pipe', ...fds] });
  } finally {
    for (const fd of fds) fs.closeSync(fd);
  }
  let out = '';
  let err = '';
  proc.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(0, 4096)));
  proc.stderr?.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-2048)));
  const problem = new Promise<StartProblem | null>((resolve) => {
    proc.on('error', (e) => resolve({ uid, gid, message: `the probe as uid ${uid} could not be started (${e.message})` }));
    proc.on('close', (code, signal) => {
      const failed = out.split('\n').find((l) => Object.hasOwn(host, l));
      if (failed) {
        const file = host[failed]!;
        const why = failed === 'x:' ? ': its filesystem is mounted noexec (set DEVBOXD_DATA_DIR to a directory on another)' : '';
        return resolve({ path: file, uid, gid, message: `uid ${uid} (gid ${gid}) ${verbs[failed[0]!]} ${file}${why}` });
      }
      if (code === 0) return resolve(null);
      resolve({ uid, gid, message: `the probe as uid ${uid} failed (${signal ?? `exit ${code}`}): ${err.trim() || 'no message'}` });
    });
  });
  return { proc, problem };
}
