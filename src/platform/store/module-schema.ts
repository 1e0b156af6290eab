import { BIG, ddl, type Ddl } from './ddl.js';
import type { SqlExecutor } from './sql/executor.js';

/**
 * The tables a module owns, migrated by the module itself so that adding a resource touches only its folder
 * (and one registration line). Each step is written once for both databases (ddl.ts) and its version is its
 * place in `steps`, the same on both; versions count per module and are recorded in `module_migrations`. Append
 * only: a released step never changes, and a database a newer devboxd migrated further is refused. A step runs
 * inside the start's one transaction (migrateModules): nothing in it may end a transaction or need to be
 * outside one (PostgreSQL's CREATE INDEX CONCURRENTLY, SQLite's PRAGMA foreign_keys).
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

/** What a migration says at info level (a pino logger fits). */
export interface MigrationLog {
  info(fields: Record<string, unknown>, msg: string): void;
}

/** One module brought from one version to another at this start. */
export interface Migrated {
  module: string;
  from: number;
  to: number;
  durationMs: number;
}

/**
 * Brings every module's tables up to date, in the order given, in one transaction: a step that fails rolls
 * back every step of this start, so the database stays as the devboxd before left it and that devboxd still
 * runs on it. A module recorded at a version above its steps (a newer devboxd migrated it) is refused before
 * any step runs. Modules this code does not know are left alone: their tables are not read here.
 */
export async function migrateModules(db: SqlExecutor, schemas: readonly ModuleSchema[], log?: MigrationLog): Promise<Migrated[]> {
  const migrated = await db.transaction(async (tx) => {
    // Both locks, in the order older servers take them (never both at once): no deadlock with one of them.
    if (tx.dialect === 'postgres') for (const lock of [CORE_LOCK, MODULE_LOCK]) await tx.query('SELECT pg_advisory_xact_lock(?)', [lock]);
    const counted = schemas.find((s) => s.legacy);
    await adoptCounters(tx, counted);
    const versions = await versionsOf(tx);
    refuseNewer(schemas, versions);
    const done: Migrated[] = [];
    for (const { module, steps } of schemas) {
      const from = versions.get(module) ?? 0;
      if (from === steps.length) continue;
      const started = performance.now();
      for (let v = from; v < steps.length; v++) {
        await tx.script(steps[v]!.render(tx.dialect)).catch((err: Error) => {
          throw new Error(
            `module ${module}: migration v${v + 1} failed: ${err.message} (rolled back with the rest of this start's migrations: the database is as it was)`,
          );
        });
        await tx.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', [module, v + 1, Date.now()]);
      }
      done.push({ module, from, to: steps.length, durationMs: Math.round(performance.now() - started) });
    }
    return done;
  });
  // After the commit: a line for a migration that was rolled back would say what did not happen.
  for (const m of migrated) {
    log?.info(
      { module: m.module, from: m.from, to: m.to, duration_ms: m.durationMs },
      `migrated module ${m.module} from schema v${m.from} to v${m.to} in ${m.durationMs} ms`,
    );
  }
  return migrated;
}

/** Each module's version as module_migrations records it. */
async function versionsOf(tx: SqlExecutor): Promise<Map<string, number>> {
  const { rows } = await tx.query<{ module: string; v: number }>('SELECT module, MAX(version) AS v FROM module_migrations GROUP BY module');
  return new Map(rows.map((r) => [r.module, Number(r.v)]));
}

/** Every module a newer devboxd took past what this code knows, named in one message with both versions. */
function refuseNewer(schemas: readonly ModuleSchema[], versions: ReadonlyMap<string, number>): void {
  const newer = schemas.filter((s) => (versions.get(s.module) ?? 0) > s.steps.length);
  if (newer.length === 0) return;
  const named = newer.map((s) => `module ${s.module}: database schema v${versions.get(s.module)}, this devboxd knows up to v${s.steps.length}`);
  throw new Error(
    `the database was migrated by a newer devboxd (${named.join('; ')}): run that devboxd or a newer one on it, or restore a backup made before the upgrade; this devboxd changed nothing`,
  );
}

/**
 * Makes `module_migrations` and moves a database's own counter into it (inside migrateModules' transaction,
 * under the lock older servers took on PostgreSQL, so two servers starting at once on an empty database do this
 * once): a counter at k records the legacy module at k + offset; then the counter is retired (COUNTERS_RETIRED).
 */
async function adoptCounters(tx: SqlExecutor, legacy: ModuleSchema | undefined): Promise<void> {
  const pg = tx.dialect === 'postgres';
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
  if (counter > last) {
    throw new Error(
      `the database was migrated by a newer devboxd (schema v${counter}, this devboxd knows up to v${last}): run that devboxd or a newer one on it`,
    );
  }
  if (counter > 0 && legacy && spec && !(await versionsOf(tx)).has(legacy.module)) {
    for (let v = 1; v <= counter + spec.offset; v++) {
      await tx.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', [legacy.module, v, Date.now()]);
    }
  }
  if (pg) await tx.query('INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, ?)', [COUNTERS_RETIRED, Date.now()]);
  else await tx.query(`PRAGMA user_version = ${COUNTERS_RETIRED}`);
}
