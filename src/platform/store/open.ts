import { migrateModules, type ModuleSchema } from './module-schema.js';
import { migratePostgres } from './postgres/migrate.js';
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
  /** The resource modules' own tables, migrated after the core ones (see src/resources/index.ts). */
  modules?: readonly ModuleSchema[];
}

/**
 * Opens the configured database and brings its schema up to date (refusing a newer one); `parts` builds the
 * resources' stores (resources/core-store.ts passes them: the platform names none).
 */
export async function openSqlStore(opts: StoreOptions, parts: StorePartsFactory): Promise<Store> {
  let db: SqlExecutor;
  if (opts.databaseUrl) {
    const pg = PgExecutor.connect(opts.databaseUrl);
    db = pg;
    try {
      await migratePostgres(pg);
    } catch (err) {
      await pg.close();
      throw err;
    }
  } else {
    db = new SqliteExecutor(openDatabase(opts.dataDir));
  }
  try {
    await migrateModules(db, opts.modules ?? []);
  } catch (err) {
    await db.close();
    throw err;
  }
  return sqlStore(db, parts);
}
