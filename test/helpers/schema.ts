import type { SqlExecutor } from '../../src/platform/store/sql/executor.js';

/**
 * The schema as the database describes it, in an order that does not depend on how it was made: what the
 * upgrade tests compare against a fresh database's, and the migration tests before and after a failed start.
 */
export async function schemaOf(db: SqlExecutor): Promise<unknown> {
  const rows = async (sql: string) => (await db.query(sql)).rows;
  if (db.dialect === 'sqlite') {
    // SQLite keeps each CREATE as written (ALTER ... ADD COLUMN appends to it): compared up to whitespace.
    const objects = await rows("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name != 'sqlite_sequence' ORDER BY type, name");
    return {
      objects: objects.map((o) => ({ ...o, sql: typeof o.sql === 'string' ? o.sql.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')') : o.sql })),
      columns: await rows("SELECT m.name AS tbl, p.* FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid"),
      indexes: await rows("SELECT m.name AS tbl, p.* FROM sqlite_master m, pragma_index_list(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.name"),
    };
  }
  return {
    columns: await rows(
      `SELECT table_name, column_name, ordinal_position, data_type, collation_name, is_nullable, column_default
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    ),
    indexes: await rows("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY tablename, indexname"),
    constraints: await rows(
      `SELECT conrelid::regclass::text AS tbl, conname, contype, pg_get_constraintdef(oid) AS def
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
    ),
    sequences: await rows("SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_schema = 'public' ORDER BY 1"),
  };
}

/** Each module's version as the database records it. */
export async function moduleVersions(db: SqlExecutor): Promise<Record<string, number>> {
  const { rows } = await db.query<{ module: string; v: number }>('SELECT module, MAX(version) AS v FROM module_migrations GROUP BY module ORDER BY module');
  return Object.fromEntries(rows.map((r) => [r.module, Number(r.v)]));
}
