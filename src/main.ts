import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { buildDeps, type Deps } from './deps.js';
import { lockDataDir } from './lib/data-dir-lock.js';
import { listenControl } from './resources/evictions/index.js';
import { createLogger, type Logger } from './lib/logger.js';

export interface Running {
  app: FastifyInstance;
  deps: Deps;
  url: string;
  stop(): Promise<void>;
}

/**
 * No request may end the process: an error that escapes a background path (a promise nobody awaits, a
 * callback of a stream) is logged with its stack and the server keeps serving every other tenant.
 */
function containCrashes(logger: Logger): void {
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled promise rejection (contained)'));
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception (contained)'));
}

/**
 * Starts devboxd: lock the data dir (before anything opens or reconciles it), build services, bootstrap the
 * first key, listen (the API and the operator's control socket), and drain on SIGTERM/SIGINT.
 */
export async function startServer(config: Config): Promise<Running> {
  const lock = await lockDataDir(config.dataDir);
  const logger = createLogger(config.logLevel);
  containCrashes(logger);
  const deps = await buildDeps(config, logger);
  const { createdSecret } = await deps.accounts.bootstrap(config.adminKey);
  const app = await buildApp(deps, {
    logger,
    bodyLimit: config.bodyLimit,
    bodyTimeoutMs: config.bodyTimeoutMs,
    connections: config.connections,
    consoleOrigins: consoleOrigins(config.env),
  });
  // SSH first: with SSH on the API port (the default), the first TLS connection may come as soon as it listens.
  const ssh = await deps.ssh.front.listen();
  await app.listen({ host: config.host, port: config.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  const control = await listenControl(config.dataDir, deps.evictions.service, deps.evictionConfig.graceMs, logger.child({ component: 'control' }));

  // Plain lines on stdout before the JSON logs take over: what a person starting the server needs.
  process.stdout.write(`devboxd listening on ${url}\n`);
  if (ssh.api) process.stdout.write(`devboxd ssh (TLS, box by server name) on the API port, ${host}:${port}\n`);
  if (ssh.tls) process.stdout.write(`devboxd ssh (TLS, box by server name) on ${ssh.tls.address}:${ssh.tls.port}\n`);
  if (ssh.plain) process.stdout.write(`devboxd ssh (plain, box by user name) on ${ssh.plain.address}:${ssh.plain.port}\n`);
  if (createdSecret) {
    fs.writeFileSync(path.join(config.dataDir, 'admin-key'), `${createdSecret}\n`, { mode: 0o600 });
    process.stdout.write(`admin key: ${createdSecret} (saved to ${path.join(config.shownDataDir, 'admin-key')})\n`);
  } else if (config.adminKey) {
    process.stdout.write('admin key: the one set as DEVBOXD_ADMIN_KEY (or server.admin_key in the config file)\n');
  } else {
    process.stdout.write(`admin key: created at first start, see ${path.join(config.shownDataDir, 'admin-key')}\n`);
  }

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (deps.evictionConfig.onShutdown === 'suspend') {
        // Before the API closes: watchers hear of each eviction, and clients may act until the deadline.
        logger.info('shutting down: suspending every devbox (DEVBOXD_EVICT_ON_SHUTDOWN=suspend)');
        await drainWithin(deps, deps.evictionConfig.graceMs, deps.evictionConfig.shutdownTimeoutMs, logger);
      } else {
        logger.info('shutting down: draining requests; devboxes keep running and are adopted at next start');
      }
      await control?.close();
      await app.close();
      await deps.close();
      await lock.release();
    })());
  return { app, deps, url, stop };
}

/**
 * The SIGTERM drain, bounded: a service manager kills a server that takes too long (mid-suspend), and clients
 * that keep creating boxes would keep a drain going. Past the deadline the boxes still running are named and
 * left running, to be adopted at the next start.
 */
async function drainWithin(deps: Deps, graceMs: number, timeoutMs: number, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  const drained = deps.evictions.service.drain('host_shutdown', graceMs).catch((err) => logger.error({ err }, 'drain at shutdown failed'));
  const first = await Promise.race([drained, timedOut]);
  clearTimeout(timer);
  if (first !== 'timeout') return;
  const left = await deps.store.devboxes.listByStatus(['running'], deps.node).catch(() => []);
  logger.warn({ timeoutMs, left: left.map((d) => d.id) }, 'shutdown drain deadline passed: stopping with these devboxes running (adopted at next start)');
}

/**
 * Origins other than its own the console's pages may call: DEVBOXD_PUBLIC_URL's, where presigned object URLs
 * point (an upload PUTs there). The objects module has already refused a malformed value by now.
 */
function consoleOrigins(env: NodeJS.ProcessEnv): string[] {
  const raw = env.DEVBOXD_PUBLIC_URL?.trim();
  if (!raw) return [];
  try {
    return [new URL(raw).origin];
  } catch {
    return [];
  }
}
