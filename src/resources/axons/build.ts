import path from 'node:path';
import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../platform/store/types.js';
import type { DevboxService } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import type { Sandbox } from '../../runtime/driver.js';
import { AxonService } from './axon-service.js';
import { Broker } from './broker.js';
import { BrokerMounts } from './broker-mounts.js';
import { EventHub, type HubLimits } from './event-hub.js';
import { SqlAxonStore } from './sql-axon-store.js';
import { SqlRunner, type SqlLimits } from './sql-runner.js';
import type { AxonConfig } from './config.js';
import type { BoxLog } from './broker.js';

export { AXONS_SCHEMA } from './schema.js';
export { axonRoutes } from './routes/index.js';

/** Live fan-out bounds: a subscriber's queue, subscribers per axon, per account's SSE streams and per server. */
export const HUB_LIMITS: HubLimits = { maxEvents: 1000, maxBytes: 8 * 1024 * 1024, maxPerAxon: 1000, maxTotal: 2000, maxPerAccount: 200 };
/**
 * Axon SQL: two processes, 32 waiting jobs, one running and four waiting per account, 5 s per job, 1000 rows
 * or 4 MiB per result, 64 MiB per database.
 */
export const SQL_LIMITS: SqlLimits = {
  processes: 2,
  queue: 32,
  accountRunning: 1,
  accountWaiting: 4,
  timeoutMs: 5000,
  maxRows: 1000,
  maxBytes: 4 * 1024 * 1024,
  maxDbBytes: 64 * 1024 * 1024,
};
/** How often a server on PostgreSQL looks for events other servers published to the axons it streams. */
const CATCH_UP_MS = 500;

export interface AxonsModule {
  service: AxonService;
  hub: EventHub;
  mounts: BrokerMounts;
  broker: Broker;
  sql: SqlRunner;
  close(): void;
}

export function buildAxons(opts: {
  store: Store;
  dataDir: string;
  devboxes: () => DevboxService;
  resume: (accountId: string, id: string) => Promise<unknown>;
  environmentOf: (d: Devbox) => Promise<Record<string, string>>;
  /** Whether the sandbox is still the box's running one (the lifecycle's active set). */
  running: (id: string, sandbox: Sandbox) => boolean;
  log: Logger;
  limits?: { hub?: Partial<HubLimits>; sql?: Partial<SqlLimits> };
  config: AxonConfig;
  /** Writes an entry to a devbox's log (the broker says there why it gave up on an agent). */
  boxLog: BoxLog;
}): AxonsModule {
  const { store, log } = opts;
  const axons = new SqlAxonStore(store.db);
  const hub = new EventHub((id, after, page, upTo) => axons.eventsAfter(id, after, page, upTo), { ...HUB_LIMITS, ...opts.limits?.hub });
  const sql = new SqlRunner({ ...SQL_LIMITS, ...opts.limits?.sql }, path.join(opts.dataDir, 'axons'), log);
  const mounts = new BrokerMounts(store, axons, opts.devboxes, opts.resume, log);
  const service = new AxonService(axons, hub, sql, [mounts.onPublished], opts.config);
  const broker = new Broker(mounts.store, hub, (accountId, id, e) => service.publish(accountId, id, e), opts.environmentOf, opts.running, log, opts.boxLog);
  // Two servers on one PostgreSQL: each announces only its own publishes, so each polls for the others'.
  const poll =
    store.db.dialect === 'postgres'
      ? setInterval(() => void hub.catchUp((ids) => axons.lastSequences(ids)).catch((err) => log.warn({ err }, 'axon catch-up failed')), CATCH_UP_MS)
      : undefined;
  poll?.unref();
  return {
    service,
    hub,
    mounts,
    broker,
    sql,
    close() {
      if (poll) clearInterval(poll);
      broker.close();
      sql.close();
    },
  };
}
