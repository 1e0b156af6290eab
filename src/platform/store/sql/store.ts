import type { Store, StorePartsFactory } from '../types.js';
import type { SqlExecutor } from './executor.js';
import { SqlIdempotencyStore } from './idempotency-store.js';
import { SqlJobStore } from '../../jobs/sql-job-store.js';

/**
 * Every store over one executor; a transaction makes the same set over the executor bound to it. The
 * resources' stores come from `parts` (see StoreParts), so the platform imports none of them.
 */
export function sqlStore(db: SqlExecutor, parts: StorePartsFactory): Store {
  return {
    ...parts(db),
    db,
    dialect: db.dialect,
    idempotency: new SqlIdempotencyStore(db),
    jobs: new SqlJobStore(db),
    transaction: <T>(fn: (tx: Store) => Promise<T>): Promise<T> => db.transaction((tx) => fn(sqlStore(tx, parts))),
    async ping(): Promise<void> {
      await db.query('SELECT 1');
    },
    close: (): Promise<void> => db.close(),
  };
}
