import type { SqlExecutor } from '../sql/executor.js';
import { PG_MIGRATIONS } from './migrations.js';

/** Any constant works: it only keeps two servers starting at once from migrating the same database twice. */
const MIGRATION_LOCK = 0x64657662;

/**
 * Applies the migrations this build knows and refuses a database a newer devboxd migrated (as SQLite does
 * with user_version). Each one runs in its own transaction under an advisory lock, the creation of
 * schema_migrations included: `CREATE TABLE IF NOT EXISTS` is not safe against itself (two servers starting
 * at once on an empty database both try to insert the table's catalog row, and one fails).
 */
export async function migratePostgres(db: SqlExecutor): Promise<void> {
  for (;;) {
    const applied = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
      await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL)');
      const { rows } = await tx.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
      const current = rows[0]?.v ?? 0;
      if (current > PG_MIGRATIONS.length) {
        throw new Error(`database schema v${current} is newer than this devboxd (v${PG_MIGRATIONS.length})`);
      }
      if (current === PG_MIGRATIONS.length) return false;
      await tx.query(PG_MIGRATIONS[current]!);
      await tx.query('INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, ?)', [current + 1, Date.now()]);
      return true;
    });
    if (!applied) return;
  }
}
