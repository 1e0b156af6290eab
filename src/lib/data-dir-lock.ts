import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { nativeHelper } from './install-root.js';

const DIRLOCK = nativeHelper('dirlock');
const EXIT_BUSY = 75;

/** Another server holds the data dir: the caller exits without touching anything. */
export class DataDirLockedError extends Error {}

export interface DataDirLock {
  /** The lock file (`<data>/devboxd.lock`, holding the server's pid). */
  readonly file: string;
  /** Lets the lock go (the server has stopped); it also goes with the process, however that ends. */
  release(): Promise<void>;
}

/**
 * Takes the exclusive lock of a data dir: one server per data dir, taken before the database is opened or
 * anything reconciles. It is a `flock` held by a small native helper (`native/dirlock.c`, Node has no flock)
 * that dies with this process, so a server killed with SIGKILL leaves no stale lock for the next start.
 * Operator commands (accounts, keys) only touch the database and take no lock: SQLite handles them beside a
 * running server.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'devboxd.lock');
  const lock = await flockFile(file);
  if ('busy' in lock) {
    const who = lock.busy ? `devboxd (pid ${lock.busy})` : 'devboxd';
    throw new DataDirLockedError(
      `another ${who} is already serving the data dir ${dataDir} (lock: ${file}); stop it or set DEVBOXD_DATA_DIR to another directory`,
    );
  }
  return lock;
}

/**
 * An exclusive flock on `file` (created 0600 if absent, this process's pid written in it) held until
 * `release()` or this process ends; `{busy: pid}` (0 when unknown) when another process holds it.
 */
export async function flockFile(file: string): Promise<DataDirLock | { busy: number }> {
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  if (!fs.existsSync(DIRLOCK)) throw new Error(`${DIRLOCK} is missing: run scripts/setup.sh (npm start does)`);
  const child = spawn(DIRLOCK, [file, String(process.pid)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string | undefined>((resolve, reject) => {
    child.once('error', reject);
    lines.once('line', resolve);
    lines.once('close', () => resolve(undefined));
  });
  lines.close();
  if (first !== 'locked') {
    const code = await exited;
    if (code === EXIT_BUSY) return { busy: Number(/^busy (\d+)$/.exec(first ?? '')?.[1] ?? 0) };
    throw new Error(`could not lock ${file}: dirlock exited with ${code}`);
  }
  // The helper must not keep the event loop alive; its stdin stays open until release() or this process ends.
  child.unref();
  (child.stdin as unknown as { unref(): void }).unref();
  (child.stdout as unknown as { unref(): void }).unref();
  return {
    file,
    async release() {
      child.ref(); // keeps the process up until the helper is gone
      child.stdin!.end();
      await exited;
    },
  };
}
