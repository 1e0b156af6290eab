import { BIG, ddl, type Ddl } from './ddl.js';
import type { SqlExecutor } from './sql/executor.js';

/**
 * The tables a module owns, migrated by the module itself so that adding a resource touches only its folder
 * (and one registration line). Each step is written once for both databases (ddl.ts) and its version is its
 * place in `steps`, the same on both; versions count per module and are recorded in `module_migrations`. Append
 * only: a released step never changes, and a database a newer devboxd migrated further is refused.
 */
export interface ModuleSchema {
  /** Recorded with every version applied; never renamed. */
  module: string;
  steps: readonly Ddl[];
  /**
   * For the one module whose versions the database counted itself before `module_migrations` held them (the
   * core tables): SQLite's `user_version` and PostgreSQL's `schema_migrations`, up to `last`, meant this module
   * at the counter plus `offset` (PostgreSQL's first migration was SQLite's first six at once).
   */
  legacy?: { readonly sqlite: LegacyCounter; readonly postgres: LegacyCounter };
}

export interface LegacyCounter {
  /** The highest value a devboxd that counted this way wrote. */
  readonly last: number;
  readonly offset: number;
}

/**
 * Where the versions are, created before any version is read. Also a step of the core module (its v8, when
 * the table came to be), which finds it there: IF NOT EXISTS makes that a no-op, and SQLite keeps the text
 * without the clause, so a table made either way reads the same.
 */
export const MODULE_MIGRATIONS: Ddl = ddl`CREATE TABLE IF NOT EXISTS module_migrations (
     module TEXT NOT NULL,
     version INTEGER NOT NULL,
     applied_at_ms ${BIG} NOT NULL,
     PRIMARY KEY (module, version)
   );`;

/**
 * What the old counters hold once `module_migrations` has every version: above anything a devboxd that read
 * them knows, so one started on this database refuses it ("database schema v100 is newer than this devboxd")
 * instead of applying its migrations again. Any other value above `last` is a newer devboxd's: refused here.
 */
export const COUNTERS_RETIRED = 100;

/** The lock older devboxd took for its core migrations: one starting beside this one waits, then is refused. */
const CORE_LOCK = 0x64657662;
/** Any constant works; it keeps two servers starting at once from applying one module version twice. */
const MODULE_LOCK = 0x6d6f6475;

/** Brings every module's tables up to date, in the order given; one transaction per version. */
export async function migrateModules(db: SqlExecutor, schemas: readonly ModuleSchema[]): Promise<void> {
  const counted = schemas.find((s) => s.legacy);
  await adoptCounters(db, counted);
  for (const schema of schemas) {
    for (;;) {
      const applied = await db.transaction(async (tx) => {
        if (tx.dialect === 'postgres') await tx.query('SELECT pg_advisory_xact_lock(?)', [MODULE_LOCK]);
        const current = await versionOf(tx, schema.module);
        const steps = schema.steps;
        if (current > steps.length) {
          throw new Error(`module ${schema.module}: database schema v${current} is newer than this devboxd (v${steps.length})`);
        }
        if (current === steps.length) return false;
        await tx.script(steps[current]!.render(tx.dialect)).catch((err: Error) => {
          throw new Error(`module ${schema.module}: migration v${current + 1} failed: ${err.message}`);
        });
        await tx.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', [schema.module, current + 1, Date.now()]);
        return true;
      });
      if (!applied) break;
    }
  }
}

async function versionOf(tx: SqlExecutor, module: string): Promise<number> {
  const { rows } = await tx.query<{ v: number | null }>('SELECT MAX(version) AS v FROM module_migrations WHERE module = ?', [module]);
  return Number(rows[0]?.v ?? 0);
}

/**
 * Makes `module_migrations` and moves a database's own counter into it, in one transaction (under the lock
 * older servers took on PostgreSQL, so two servers starting at once on an empty database do this once): a
 * counter at k records the legacy module at k + offset; then the counter is retired (COUNTERS_RETIRED).
 */
async function adoptCounters(db: SqlExecutor, legacy: ModuleSchema | undefined): Promise<void> {
  await db.transaction(async (tx) => {
    const pg = tx.dialect === 'postgres';
    if (pg) await tx.query('SELECT pg_advisory_xact_lock(?)', [CORE_LOCK]);
    await tx.script(MODULE_MIGRATIONS.render(tx.dialect));
    let counter: number;
    if (pg) {
      // As older servers made it: they read it first, so it must exist for them to refuse the database.
      await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL)');
      counter = Number((await tx.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations')).rows[0]?.v ?? 0);
    } else {
      counter = Number((await tx.query<{ user_version: number }>('PRAGMA user_version')).rows[0]?.user_version ?? 0);
    }
    if (counter === COUNTERS_RETIRED) return;
    const spec = legacy?.legacy?.[tx.dialect];
    const last = spec?.last ?? 0;
    if (counter > last) throw new Error(`database schema v${counter} is newer than this devboxd (v${last})`);
    if (counter > 0 && legacy && spec && (await versionOf(tx, legacy.module)) === 0) {
      for (let v = 1; v <= counter + spec.offset; v++) {
        await tx.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', [legacy.module, v, Date.now()]);
      }
    }
    if (pg) await tx.query('INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, ?)', [COUNTERS_RETIRED, Date.now()]);
    else await tx.query(`PRAGMA user_version = ${COUNTERS_RETIRED}`);
  });
}
