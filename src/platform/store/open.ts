import { migratePostgres } from './postgres/migrate.js';
import { PgExecutor } from './postgres/executor.js';
import { SqlStore } from './sql/store.js';
import { openDatabase } from './sqlite/db.js';
import { SqliteExecutor } from './sqlite/executor.js';
import type { Store } from './types.js';

export interface StoreOptions {
  /** SQLite lives in `<dataDir>/devboxd.db` unless `databaseUrl` names a PostgreSQL database. */
  dataDir: string;
  databaseUrl?: string;
}

/** Opens the configured database and brings its schema up to date (refusing a newer one). */
export async function openStore(opts: StoreOptions): Promise<Store> {
  if (opts.databaseUrl) {
    const db = PgExecutor.connect(opts.databaseUrl);
    try {
      await migratePostgres(db);
    } catch (err) {
      await db.close();
      throw err;
    }
    return new SqlStore(db);
  }
  return new SqlStore(new SqliteExecutor(openDatabase(opts.dataDir)));
}
