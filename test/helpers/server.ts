import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Runloop, { RunloopSDK } from '@runloop/api-client';
import { DEVBOXD_BIN, ROOT } from './paths.js';
import { startTestPostgres, type TestPostgres } from './postgres.js';
import { acquireTestS3, releaseTestS3, serverBlobs } from './s3.js';

export { DEVBOXD_BIN, ROOT };

export const ADMIN_KEY = 'ak_test_admin_key_0123456789abcdef';

export interface TestServer {
  url: string;
  dataDir: string;
  /** The API server's own part of it (database, blobs, execution output): `<data>/api`. */
  apiDir: string;
  /** An SDK client with the admin key (HTTP/2 by default, like the SDK itself). */
  client(opts?: { apiKey?: string; http2?: boolean; maxRetries?: number }): Runloop;
  /** The object-oriented wrapper (`sdk.devbox.create()` ...), HTTP/2 like the SDK's default. */
  sdk(opts?: { apiKey?: string; http2?: boolean }): RunloopSDK;
  /** Pid of the API server: the process that serves the API port (the unprivileged child of the supervisor). */
  pid(): number;
  /** Pid of its node agent (the root child of the supervisor). */
  agentPid(): number;
  /** Pid of the process the test started: the supervisor of the two (DEVBOXD_ROLE=all). */
  supervisorPid(): number;
  /** Resident bytes of the API server and the node agent together: the memory devboxd holds. */
  rssBytes(): number;
  /** Its blobs (key below `prefix` → size), from `<data>/blobs` or its S3 bucket, whichever it uses. */
  blobs(prefix: string): Promise<Record<string, number>>;
  /** Output the server has printed so far. */
  output(): string;
  /**
   * SIGKILL (SIGTERM if graceful), then start again on the same data dir (and port): the same devboxd, or
   * `bin` (another version's, test/api/upgrade.test.ts), with `env` over the variables it had.
   */
  restart(opts?: { graceful?: boolean; whileDown?: () => void | Promise<void>; bin?: string; env?: Record<string, string> }): Promise<void>;
  stop(): Promise<void>;
}

/**
 * With DEVBOXD_TEST_DATABASE=postgres, servers run on PostgreSQL: one throwaway cluster per test process,
 * started with the first server and stopped with the last, a fresh database for each server.
 */
let cluster: Promise<TestPostgres> | undefined;
let clusterUsers = 0;

async function acquireDatabase(): Promise<string> {
  clusterUsers++;
  cluster ??= startTestPostgres();
  return (await cluster).database();
}

async function releaseDatabase(): Promise<void> {
  if (--clusterUsers > 0 || !cluster) return;
  const c = cluster;
  cluster = undefined;
  await (await c).stop();
}

/** A database on the shared test cluster that outlives any one server (two servers sharing it). */
export async function sharedTestDatabase(): Promise<{ url: string; release(): Promise<void> }> {
  return { url: await acquireDatabase(), release: releaseDatabase };
}

/**
 * Starts the real server as a child process (`devboxd serve`) on a free port with a temp data dir (under
 * `parentDir`, default the OS temp dir). The base image cache is shared (`<repo>/data/images`) so it is built
 * once per machine, not once per test.
 */
export async function startTestServer(env: Record<string, string> = {}, opts: { parentDir?: string; bin?: string } = {}): Promise<TestServer> {
  const dataDir = fs.mkdtempSync(path.join(opts.parentDir ?? os.tmpdir(), 'devboxd-test-'));
  const onPostgres = process.env.DEVBOXD_TEST_DATABASE === 'postgres' && !env.DEVBOXD_DATABASE_URL;
  if (onPostgres) env = { ...env, DEVBOXD_DATABASE_URL: await acquireDatabase() };
  // With DEVBOXD_TEST_BLOB_BACKEND=s3, blobs go to a shared test S3 server, under a prefix of this server's.
  const onS3 = process.env.DEVBOXD_TEST_BLOB_BACKEND === 's3' && !env.DEVBOXD_BLOB_BACKEND;
  if (onS3) env = { ...(await acquireTestS3()).env(), ...env };
  let child: ChildProcess;
  let out = '';
  let port = 0;
  let bin = opts.bin ?? DEVBOXD_BIN;

  const launch = async () => {
    // BENCH_SERVER_NODE_ARGS: flags for the server's node (e.g. --cpu-prof), which NODE_OPTIONS refuses.
    const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    child = spawn(process.execPath, [...nodeArgs, bin, 'serve'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DEVBOXD_PORT: String(port),
        DEVBOXD_DATA_DIR: dataDir,
        DEVBOXD_IMAGE_DIR: path.join(ROOT, 'data/images'),
        DEVBOXD_ADMIN_KEY: ADMIN_KEY,
        DEVBOXD_LOG_LEVEL: process.env.DEVBOXD_LOG_LEVEL ?? 'warn',
        // Boxes of tests reach nothing outside the machine (no DNS either) unless a test builds its own
        // outside world and says so (test/api/network.test.ts).
        DEVBOXD_DEFAULT_EGRESS: 'deny',
        // Test upstreams, registries and git servers listen on 127.0.0.1; a test of the guard passes ''.
        DEVBOXD_OUTBOUND_ALLOW: '127.0.0.1',
        // No warm pool unless a test asks (DEVBOXD_TEST_WARM_POOL runs whole suites with one): a pool boots boxes
        // in the background, which tests counting boxes or sandboxes would see.
        DEVBOXD_WARM_POOL: process.env.DEVBOXD_TEST_WARM_POOL ?? '0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (d: Buffer) => {
        out += d.toString();
        const m = /devboxd listening on (\S+)/.exec(out);
        if (m) resolve(m[1]!);
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening:\n${out}`)));
    });
    port = Number(new URL(url).port);
    return url;
  };

  let url: string;
  try {
    url = await launch();
  } catch (err) {
    if (onPostgres) await releaseDatabase();
    if (onS3) await releaseTestS3();
    throw err;
  }
  let released = false;
  const pooled = (env.DEVBOXD_WARM_POOL ?? process.env.DEVBOXD_TEST_WARM_POOL ?? '0') !== '0';
  const exited = () => new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
  return {
    get url() {
      return url;
    },
    dataDir,
    apiDir: path.join(dataDir, 'api'),
    client: (opts = {}) =>
      new Runloop({
        baseURL: url,
        bearerToken: opts.apiKey ?? ADMIN_KEY,
        http2: opts.http2 ?? true,
        maxRetries: opts.maxRetries ?? 2,
      } as ConstructorParameters<typeof Runloop>[0]),
    sdk: (opts = {}) =>
      new RunloopSDK({ baseURL: url, bearerToken: opts.apiKey ?? ADMIN_KEY, http2: opts.http2 ?? true } as ConstructorParameters<typeof RunloopSDK>[0]),
    pid: () => roleChild(child.pid!, 'api'),
    agentPid: () => roleChild(child.pid!, 'agent'),
    supervisorPid: () => child.pid!,
    rssBytes: () => rssOf(roleChild(child.pid!, 'api')) + rssOf(roleChild(child.pid!, 'agent')),
    blobs: (prefix) => serverBlobs(env, path.join(dataDir, 'api'), prefix),
    output: () => out,
    async restart(opts = {}) {
      child.kill(opts.graceful ? 'SIGTERM' : 'SIGKILL');
      await exited();
      await opts.whileDown?.();
      bin = opts.bin ?? bin;
      env = { ...env, ...opts.env };
      out = '';
      url = await launch();
    },
    // Boxes outlive the server by design, so a test run shuts its own down first (through the API, as a
    // user would), then stops the server and removes its data dir: nothing runs or lingers afterwards.
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        await shutdownAll(url).catch(() => undefined);
        if (pooled) await emptyPools({ DEVBOXD_DATA_DIR: dataDir, ...env }).catch(() => undefined);
      }
      child.kill('SIGTERM');
      await exited();
      removeDataDir(dataDir);
      if (!released) {
        released = true;
        if (onPostgres) await releaseDatabase();
        if (onS3) await releaseTestS3();
      }
    },
  };
}

/** The supervisor's child of one role: the node agent runs as root, the API server as its own user. */
function roleChild(supervisor: number, role: 'api' | 'agent'): number {
  const kids = fs.readFileSync(`/proc/${supervisor}/task/${supervisor}/children`, 'utf8').trim().split(' ').filter(Boolean);
  const found = kids.find((k) => /^Uid:\s+0\s/m.test(fs.readFileSync(`/proc/${k}/status`, 'utf8')) === (role === 'agent'));
  if (!found) throw new Error(`no ${role === 'agent' ? 'node agent' : 'API server'} under server ${supervisor}`);
  return Number(found);
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/**
 * Removes a stopped server's data dir. A pool disk the agent was still attaching as it stopped can be left
 * mounted (the next start of a server on the dir releases it); a test's dir is not started again, so such
 * mounts are detached here first.
 */
function removeDataDir(dataDir: string): void {
  killLeftBoxes(dataDir);
  try {
    fs.rmSync(dataDir, { recursive: true, force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EBUSY') throw err;
    const mounts = fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m.startsWith(`${dataDir}/`))
      .sort()
      .reverse();
    for (const m of mounts) spawnSync('umount', ['-l', m]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Boxes outlive their server by design (a restart adopts them), so a box the stop did not shut down (another
 * account's: the stop sees the admin's only) would run on after its data dir is gone, on every later test's
 * CPU. Its processes are killed here, through its cgroups (`<hierarchy>/devboxd/<id>` for each id under
 * `<data>/boxes`), and named on stderr so the test that left it can be found.
 */
function killLeftBoxes(dataDir: string): void {
  let ids: string[];
  try {
    ids = fs.readdirSync(path.join(dataDir, 'boxes')).filter((n) => /^dbx_[a-z0-9]+$/.test(n));
  } catch {
    return;
  }
  const roots = ['/sys/fs/cgroup', ...fs.readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h))];
  const left: string[] = [];
  for (const id of ids) {
    let killed = false;
    for (const root of roots) {
      let pids: string[];
      try {
        pids = fs
          .readFileSync(path.join(root, 'devboxd', id, 'cgroup.procs'), 'utf8')
          .split('\n')
          .filter(Boolean);
      } catch {
        continue;
      }
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
          killed = true;
        } catch {}
      }
    }
    if (killed) left.push(id);
  }
  if (left.length) process.stderr.write(`test server: ${left.length} box(es) still running at its stop, killed: ${left.join(', ')}\n`);
}

/** What `devboxd pools list --json` prints. */
export interface PoolsListed {
  settings: { pool: string; size: string; blueprint_id: string | null; count: number }[];
  ready: { node: string; pool: string; ready: number; booting: number; devbox_ids: string[] }[];
}

/** `devboxd pools ARGS` on the server's database (env: its DEVBOXD_DATA_DIR, or DEVBOXD_DATABASE_URL). */
export function poolsCli(env: Record<string, string>, ...args: string[]): string {
  const r = spawnSync(process.execPath, [DEVBOXD_BIN, 'pools', ...args], { cwd: ROOT, env: { ...process.env, ...env, DEVBOXD_LOG_LEVEL: 'silent' } });
  if (r.status !== 0) throw new Error(`devboxd pools ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout.toString();
}

/**
 * Pooled boxes outlive the server too (adopted at its next start): a test's server is told to keep none and
 * waited for until it holds none, before it stops.
 */
async function emptyPools(env: Record<string, string>): Promise<void> {
  const listed = JSON.parse(poolsCli(env, 'list', '--json')) as PoolsListed;
  poolsCli(env, 'set', 'SMALL', '0');
  for (const s of listed.settings) poolsCli(env, 'set', s.size, '0', ...(s.blueprint_id ? ['--blueprint', s.blueprint_id] : []));
  for (const until = Date.now() + 30_000; Date.now() < until; ) {
    const now = JSON.parse(poolsCli(env, 'list', '--json')) as PoolsListed;
    if (now.ready.every((r) => r.ready === 0 && r.booting === 0)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Shuts down every devbox of the admin account that is not over yet. */
async function shutdownAll(url: string): Promise<void> {
  const api = new Runloop({ baseURL: url, bearerToken: ADMIN_KEY, http2: false, maxRetries: 1 } as ConstructorParameters<typeof Runloop>[0]);
  const open: string[] = [];
  for await (const box of api.devboxes.list({ limit: 100 })) {
    if (box.status !== 'shutdown' && box.status !== 'failure') open.push(box.id);
  }
  await Promise.all(open.map((id) => api.devboxes.shutdown(id).catch(() => undefined)));
}

/** Runs a shell command in a box through the SDK (execute_async, then await completion): its exit status and output. */
export async function runInBox(api: Runloop, boxId: string, command: string): Promise<{ code: number | null | undefined; out: string; err: string }> {
  const started = await api.devboxes.executeAsync(boxId, { command });
  const r = await api.devboxes.executions.awaitCompleted(boxId, started.execution_id);
  return { code: r.exit_status, out: r.stdout ?? '', err: r.stderr ?? '' };
}
