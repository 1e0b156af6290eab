import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from '../../lib/bundle.js';
import { prepareRuntimeDir, type RuntimeFile } from '../../lib/runtime-dir.js';
import { ADDON, CONFINED_DIR, CONFINED_RUNTIME, SCRIPT, SQL_GID, confined, spawnConfined, sqlIdentity } from './sql-process.js';

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
 * As a SQL process would be, in its namespaces and with its ids: each argument `r:<file>` must be readable,
 * `w:<dir>` writable, and the runtime directory's mount must allow mapping code (a data directory on a
 * `noexec` mount does not); prints the arguments that fail.
 */
const PROBE = `for a; do
  case $a in
    r:*) [ -r "\${a#r:}" ] || echo "$a" ;;
    w:*) [ -w "\${a#w:}" ] || echo "$a" ;;
  esac
done
while read -r _ _ _ _ at opts _; do
  if [ "$at" = ${CONFINED_RUNTIME} ]; then case ",$opts," in *,noexec,*) echo "x:${CONFINED_RUNTIME}/${ADDON}" ;; esac; fi
done < /proc/self/mountinfo
`;

/**
 * Checks that the first SQL process's identity can read the runtime directory `runtime` and write the axons
 * directory `dir` (a server running as root only; otherwise the processes are the server's user). Resolves
 * to the first problem, or null; `proc` is the probe (a few ms of sh, unshare and setpriv), killed on close.
 */
export function probeSqlRuntime(dir: string, runtime: string): { proc: ChildProcess; problem: Promise<StartProblem | null> } {
  const { uid, gid } = sqlIdentity(0)!;
  const host: Record<string, string> = {
    [`r:${CONFINED_RUNTIME}/${SCRIPT}`]: path.join(runtime, SCRIPT),
    [`r:${CONFINED_RUNTIME}/${ADDON}`]: path.join(runtime, ADDON),
    [`w:${CONFINED_DIR}`]: dir,
  };
  const verbs: Record<string, string> = { r: 'cannot read', w: 'cannot write', x: 'cannot load code from' };
  const command = ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', 'sh', '-c', PROBE, 'sh', ...Object.keys(host)];
  const proc = spawnConfined(dir, runtime, command, {}, ['ignore', 'pipe', 'pipe']);
  let out = '';
  let err = '';
  proc.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(0, 4096)));
  proc.stderr?.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-2048)));
  const problem = new Promise<StartProblem | null>((resolve) => {
    proc.on('error', (e) => resolve({ uid, gid, message: `they could not be started (${e.message})` }));
    proc.on('close', (code, signal) => {
      const failed = out.split('\n').find(Boolean);
      if (failed) {
        const file = host[failed] ?? path.join(runtime, ADDON);
        const why = failed.startsWith('x:') ? `: its filesystem is mounted noexec (set DEVBOXD_DATA_DIR to a directory on another)` : '';
        return resolve({ path: file, uid, gid, message: `uid ${uid} (gid ${gid}) ${verbs[failed[0]!]} ${file}${why}` });
      }
      if (code === 0) return resolve(null);
      resolve({ uid, gid, message: `their confinement fails as root (${signal ?? `exit ${code}`}): ${err.trim() || 'no message'}` });
    });
  });
  return { proc, problem };
}
