import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** A throwaway PostgreSQL server for tests: its own cluster in a temp dir, on a free 127.0.0.1 port. */
export interface TestPostgres {
  /** `postgres://devboxd@127.0.0.1:<port>/devboxd`: a fresh database per call of `database()`. */
  url: string;
  /** Creates another empty database on the same server and returns its URL (one per test server). */
  database(name?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Debian installs the server binaries under /usr/lib/postgresql/<major>/bin (scripts/setup.sh installs it). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin/postgres'))) : [];
  if (!versions.length) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql: run scripts/setup.sh');
  return path.join(root, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

/** One of the server's programs (psql, pg_dump) of the version the tests run. */
export const postgresBin = (program: string): string => path.join(binDir(), program);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * An empty cluster (initdb) for this PostgreSQL version, kept in the temp dir and copied by each test
 * server: made in a directory of its own and renamed into place whole, so a copy never sees half of one.
 */
function templateCluster(bin: string): string {
  const template = path.join(os.tmpdir(), `devboxd-pg-template-${path.basename(path.dirname(bin))}`);
  if (fs.existsSync(path.join(template, 'PG_VERSION'))) return template;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-pg-init-'));
  fs.chmodSync(dir, 0o700);
  execFileSync('chown', ['postgres:postgres', dir]);
  const data = path.join(dir, 'data');
  execFileSync(
    'setpriv',
    [
      '--reuid=postgres',
      '--regid=postgres',
      '--init-groups',
      '--',
      path.join(bin, 'initdb'),
      '-D',
      data,
      '-U',
      'devboxd',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-sync',
    ],
    {
      stdio: 'pipe',
      cwd: dir,
    },
  );
  try {
    fs.renameSync(data, template);
  } catch (err) {
    // Another test process made it meanwhile: theirs serves as well.
    if (!fs.existsSync(path.join(template, 'PG_VERSION'))) throw err;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return template;
}

/**
 * Starts PostgreSQL as the unprivileged `postgres` user (the server refuses to run as root) with trust
 * authentication on loopback only, no fsync (the tests kill devboxd, never this server), and removes every
 * trace when stopped.
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-pg-'));
  const data = path.join(dir, 'data');
  fs.chmodSync(dir, 0o700);
  execFileSync('chown', ['postgres:postgres', dir]);
  // setpriv execs the program itself (no intermediate process), so signals reach PostgreSQL directly.
  const asPostgres = (cmd: string, args: string[]) => ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', path.join(bin, cmd), ...args];
  // A copy of a cluster made once per PostgreSQL version: cp takes ~0.5 s where initdb takes ~3.
  execFileSync('cp', ['-a', templateCluster(bin), data]);
  const port = await freePort();
  const child: ChildProcess = spawn(
    'setpriv',
    asPostgres('postgres', [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=200',
    ]),
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
  );
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const base = `postgres://devboxd@127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const c = new pg.Client({ connectionString: `${base}/postgres` });
    try {
      await c.connect();
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => undefined);
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`PostgreSQL did not start: ${(err as Error).message}\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let n = 0;
  const database = async (name = `devboxd_${process.pid}_${++n}`) => {
    const c = new pg.Client({ connectionString: `${base}/postgres` });
    await c.connect();
    await c.query(`CREATE DATABASE "${name}"`);
    await c.end();
    return `${base}/${name}`;
  };
  const url = await database('devboxd');
  return {
    url,
    database,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT'); // fast shutdown: disconnect clients, stop at once
        // Unref'd: a timer left pending after a quick exit would hold the test process open for its 10 s.
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
