import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type BuildOptions, buildDeps, type Deps } from '../../src/deps.js';
import { createLogger } from '../../src/lib/logger.js';
import { startTestPostgres } from './postgres.js';
import { ADMIN_KEY } from './server.js';
import { StubRuntime } from './stub-runtime.js';

export interface FastApp {
  app: FastifyInstance;
  deps: Deps;
  runtime: StubRuntime;
  dataDir: string;
  /** The PostgreSQL database it runs on (DEVBOXD_DATABASE_URL), if not SQLite. */
  databaseUrl?: string;
  /** A request with the given key (the admin key unless `key` says otherwise; `null` sends none). */
  call(opts: InjectOptions & { key?: string | null }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/**
 * The fast tier: the real app (`buildApp`) and the real SQLite store in a temp dir, over a stub runtime, driven
 * with `inject()` (no socket, no root, no sandbox). `ready` false leaves the app open for more routes; `env` adds
 * configuration (DEVBOXD_DATABASE_URL: PostgreSQL instead); `logTo` receives its log lines at debug level;
 * `modules` replaces the registered resource modules (resources/index.ts).
 */
export async function buildFastApp(
  opts: { ready?: boolean; env?: Record<string, string>; logTo?: { write(line: string): void }; modules?: BuildOptions['modules'] } = {},
): Promise<FastApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-fast-'));
  const config = loadConfig({
    DEVBOXD_DATA_DIR: dataDir,
    DEVBOXD_ADMIN_KEY: ADMIN_KEY,
    DEVBOXD_LOG_LEVEL: 'silent',
    // Test upstreams, registries and git servers listen on 127.0.0.1; a test of the guard passes ''.
    DEVBOXD_OUTBOUND_ALLOW: '127.0.0.1',
    // No warm pool unless a test asks (see helpers/server.ts).
    DEVBOXD_WARM_POOL: '0',
    ...opts.env,
  });
  const logger = opts.logTo ? createLogger('debug', opts.logTo) : createLogger(process.env.DEVBOXD_LOG_LEVEL ?? 'silent');
  const runtime = new StubRuntime();
  const deps = await buildDeps(config, logger, { runtime, modules: opts.modules });
  await deps.accounts.bootstrap(config.adminKey);
  const app = await buildApp(deps, { logger, bodyLimit: config.bodyLimit, bodyTimeoutMs: config.bodyTimeoutMs, connections: config.connections });
  if (opts.ready !== false) await app.ready();
  return {
    app,
    deps,
    runtime,
    dataDir,
    databaseUrl: opts.env?.DEVBOXD_DATABASE_URL,
    call: async ({ key, headers, ...rest }) => {
      const auth: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key ?? ADMIN_KEY}` };
      const res = await app.inject({ ...rest, headers: { ...auth, ...headers } });
      // inject's response implements setTimeout (a route's idle cut-off) with a timer it never clears once
      // the response ended, as a socket's is: it would keep the test process alive for the idle time.
      clearTimeout((res.raw.res as { timeoutHandle?: NodeJS.Timeout }).timeoutHandle);
      return res;
    },
    async close() {
      await app.close();
      await deps.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type Call = Parameters<FastApp['call']>[0];

/**
 * The two checks every fast test file makes, against the app `app()` returns (files build theirs in `before`):
 * `ok` asserts a 200 and answers the JSON body (typed `D` unless the call says otherwise); `bad` asserts the
 * status and that the error message matches.
 */
export function answers<D = unknown>(app: () => FastApp) {
  return {
    async ok<T = D>(opts: Call): Promise<T> {
      const res = await app().call(opts);
      assert.equal(res.statusCode, 200, `${opts.method} ${opts.url}: ${res.body}`);
      return res.json() as T;
    },
    async bad(opts: Call, status: number, pattern: RegExp): Promise<void> {
      const res = await app().call(opts);
      assert.equal(res.statusCode, status, res.body);
      assert.match((JSON.parse(res.body) as { message: string }).message, pattern);
    },
  };
}

/** A fast app on SQLite, or on a PostgreSQL cluster of its own that its `close` stops. */
export async function buildFastAppOn(db: 'sqlite' | 'postgres', env: Record<string, string> = {}): Promise<FastApp> {
  if (db === 'sqlite') return buildFastApp({ env });
  const pg = await startTestPostgres();
  const f = await buildFastApp({ env: { ...env, DEVBOXD_DATABASE_URL: await pg.database() } }).catch(async (err: unknown) => {
    await pg.stop();
    throw err;
  });
  const close = f.close.bind(f);
  return { ...f, close: () => close().finally(() => pg.stop()) };
}

/**
 * Creates another account through the service the operator CLI calls (`devboxd accounts create`, whose
 * process the API tier starts) and answers its first key.
 */
export async function createAccount(f: FastApp, name: string): Promise<string> {
  return (await f.deps.accounts.createAccount(name)).secret;
}

/** A completed storage object of the admin account holding `contents` (created, uploaded, completed): its id. */
export async function uploadObject(f: FastApp, name: string, contents: string): Promise<string> {
  const { ok } = answers(() => f);
  const o = await ok<{ id: string; upload_url: string }>({ method: 'POST', url: '/v1/objects', payload: { name, content_type: 'text' } });
  const u = new URL(o.upload_url);
  assert.equal((await f.call({ method: 'PUT', url: `${u.pathname}${u.search}`, payload: contents, key: null })).statusCode, 200);
  await ok({ method: 'POST', url: `/v1/objects/${o.id}/complete`, payload: {} });
  return o.id;
}
