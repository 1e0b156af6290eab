import type { Store } from '../types.js';
import { SqlAccountStore } from '../../../resources/accounts/sql-account-store.js';
import { SqlDevboxStore } from '../../../resources/devboxes/sql-devbox-store.js';
import { SqlExecutionStore } from '../../../resources/executions/sql-execution-store.js';
import type { SqlExecutor } from './executor.js';
import { SqlIdempotencyStore } from './idempotency-store.js';
import { SqlJobStore } from '../../jobs/sql-job-store.js';
import { SqlLogStore } from '../../../resources/executions/sql-log-store.js';
import { SqlSnapshotStore } from '../../../resources/snapshots/sql-snapshot-store.js';

/** Every store over one executor; a transaction makes the same set over the executor bound to it. */
export class SqlStore implements Store {
  readonly accounts;
  readonly devboxes;
  readonly snapshots;
  readonly executions;
  readonly logs;
  readonly idempotency;
  readonly jobs;

  constructor(readonly db: SqlExecutor) {
    this.accounts = new SqlAccountStore(db);
    this.devboxes = new SqlDevboxStore(db);
    this.snapshots = new SqlSnapshotStore(db);
    this.executions = new SqlExecutionStore(db);
    this.logs = new SqlLogStore(db);
    this.idempotency = new SqlIdempotencyStore(db);
    this.jobs = new SqlJobStore(db);
  }

  get dialect() {
    return this.db.dialect;
  }

  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    return this.db.transaction((tx) => fn(new SqlStore(tx)));
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
