import { openSqlStore, type StoreOptions } from '../platform/store/open.js';
import type { Store, StoreParts } from '../platform/store/types.js';
import type { SqlExecutor } from '../platform/store/sql/executor.js';
import { SqlAccountStore } from './accounts/index.js';
import { CORE_SCHEMA } from './core-schema.js';
import { SqlDevboxStore } from './devboxes/index.js';
import { SqlExecutionStore, SqlLogStore } from './executions/index.js';
import { SqlSnapshotStore } from './snapshots/index.js';

/**
 * The stores every `Store` carries (StoreParts): the core tables' resources register them here, so the
 * platform's store opens the database without importing a resource.
 */
export const coreStoreParts = (db: SqlExecutor): StoreParts => ({
  accounts: new SqlAccountStore(db),
  devboxes: new SqlDevboxStore(db),
  snapshots: new SqlSnapshotStore(db),
  executions: new SqlExecutionStore(db),
  logs: new SqlLogStore(db),
});

/** Opens the configured database with the core stores (see platform/store/open.ts), its tables migrated first. */
export function openStore(opts: StoreOptions): Promise<Store> {
  return openSqlStore({ ...opts, modules: [CORE_SCHEMA, ...(opts.modules ?? [])] }, coreStoreParts);
}
