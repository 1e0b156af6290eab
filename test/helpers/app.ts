import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { buildDeps, type Deps } from '../../src/deps.js';
import { createLogger } from '../../src/lib/logger.js';
import { ADMIN_KEY } from './server.js';
import { StubRuntime } from './stub-runtime.js';

export interface FastApp {
  app: FastifyInstance;
  deps: Deps;
  runtime: StubRuntime;
  dataDir: string;
  /** A request with the given key (the admin key unless `key` says otherwise; `null` sends none). */
  call(opts: InjectOptions & { key?: string | null }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/**
 * The fast tier: the real app (`buildApp`) and the real SQLite store in a temp dir, over a stub runtime, driven
 * with `inject()` (no socket, no root, no sandbox). `ready` false leaves the app open for more routes; `env` adds
 * configuration (DEVBOXD_DATABASE_URL: PostgreSQL instead).
 */
export async function buildFastApp(opts: { ready?: boolean; env?: Record<string, string> } = {}): Promise<FastApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-fast-'));
  const config = loadConfig({ DEVBOXD_DATA_DIR: dataDir, DEVBOXD_ADMIN_KEY: ADMIN_KEY, DEVBOXD_LOG_LEVEL: 'silent', ...opts.env });
  const logger = createLogger(process.env.DEVBOXD_LOG_LEVEL ?? 'silent');
  const runtime = new StubRuntime();
  const deps = await buildDeps(config, logger, { runtime });
  await deps.accounts.bootstrap(config.adminKey);
  const app = await buildApp(deps, { logger, bodyLimit: config.bodyLimit, bodyTimeoutMs: config.bodyTimeoutMs });
  if (opts.ready !== false) await app.ready();
  return {
    app,
    deps,
    runtime,
    dataDir,
    call: ({ key, headers, ...rest }) => {
      const auth: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key ?? ADMIN_KEY}` };
      return app.inject({ ...rest, headers: { ...auth, ...headers } });
    },
    async close() {
      await app.close();
      await deps.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
