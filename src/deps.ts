import type { Config } from './config.js';
import { AccountService } from './domain/accounts/account-service.js';
import type { Logger } from './lib/logger.js';
import { openDatabase, type Db } from './store/sqlite/db.js';
import { SqliteAccountStore } from './store/sqlite/account-store.js';
import { SqliteIdempotencyStore } from './store/sqlite/idempotency-store.js';
import type { IdempotencyStore } from './store/types.js';

/** The composition root: every store, driver and service is built once, here, with explicit arguments. */
export interface Deps {
  db: Db;
  accounts: AccountService;
  idempotency: IdempotencyStore;
  /** Stops background work and closes what was opened, in reverse order. */
  close(): Promise<void>;
}

export async function buildDeps(config: Config, logger: Logger): Promise<Deps> {
  const db = openDatabase(config.dataDir);
  const accounts = new AccountService(new SqliteAccountStore(db));
  const idempotency = new SqliteIdempotencyStore(db);
  logger.debug({ dataDir: config.dataDir }, 'stores ready');
  return {
    db,
    accounts,
    idempotency,
    async close() {
      db.close();
    },
  };
}
