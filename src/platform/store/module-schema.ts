import type { SqlExecutor } from './sql/executor.js';

/**
 * The tables a resource module owns, migrated by the module itself so that adding a resource touches only its
 * folder (and one registration line). Versions count per module and are recorded in `module_migrations`;
 * like the core migrations they are append only, and a database a newer devboxd migrated further is refused.
 */
export interface ModuleSchema {
  /** Recorded with every version applied; never renamed. */
  module: string;
  /** One entry per version, the same versions in both dialects. */
  sqlite: string[];
  postgres: string[];
}

/** Any constant works; it keeps two servers starting at once from applying one module version twice. */
const MODULE_LOCK = 0x6d6f6475;

/** Brings every module's tables up to date, after the core migrations; one transaction per version. */
export async function migrateModules(db: SqlExecutor, schemas: readonly ModuleSchema[]): Promise<void> {
  for (const schema of schemas) {
    const steps = db.dialect === 'postgres' ? schema.postgres : schema.sqlite;
    if (schema.sqlite.length !== schema.postgres.length) {
      throw new Error(`module ${schema.module}: ${schema.sqlite.length} SQLite and ${schema.postgres.length} PostgreSQL migrations`);
    }
    for (;;) {
      const applied = await db.transaction(async (tx) => {
        if (tx.dialect === 'postgres') await tx.query('SELECT pg_advisory_xact_lock(?)', [MODULE_LOCK]);
        const { rows } = await tx.query<{ v: number | null }>('SELECT MAX(version) AS v FROM module_migrations WHERE module = ?', [schema.module]);
        const current = Number(rows[0]?.v ?? 0);
        if (current > steps.length) {
          throw new Error(`module ${schema.module}: database schema v${current} is newer than this devboxd (v${steps.length})`);
        }
        if (current === steps.length) return false;
        await tx.script(steps[current]!).catch((err: Error) => {
          throw new Error(`module ${schema.module}: migration v${current + 1} failed: ${err.message}`);
        });
        await tx.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', [schema.module, current + 1, Date.now()]);
        return true;
      });
      if (!applied) break;
    }
  }
}
