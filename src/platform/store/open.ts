import { type MigrationLog, migrateModules, type ModuleSchema } from './module-schema.js';
import { PgExecutor } from './postgres/executor.js';
import type { SqlExecutor } from './sql/executor.js';
import { sqlStore } from './sql/store.js';
import { openDatabase } from './sqlite/db.js';
import { SqliteExecutor } from './sqlite/executor.js';
import type { Store, StorePartsFactory } from './types.js';

export interface StoreOptions {
  /** SQLite lives in `<dataDir>/devboxd.db` unless `databaseUrl` names a PostgreSQL database. */
  dataDir: string;
  databaseUrl?: string;
  /** The tables, module by module in this order (resources/core-store.ts puts the core tables first). */
  modules?: readonly ModuleSchema[];
  /** Where each migration applied is said (module, from and to versions, duration): the server's logger. */
  log?: MigrationLog;
}

/**
 * Opens the configured database and brings its schema up to date (refusing a newer one); `parts` builds the
 * resources' stores (resources/core-store.ts passes them: the platform names none).
 */
export async function openSqlStore(opts: StoreOptions, parts: StorePartsFactory): Promise<Store> {
  const db: SqlExecutor = opts.databaseUrl ? PgExecutor.connect(opts.databaseUrl) : new SqliteExecutor(openDatabase(opts.dataDir));
  try {
    await migrateModules(db, opts.modules ?? [], opts.log);
  } catch (err) {
    await db.close();
    throw err;
  }
  return sqlStore(db, parts);
}
