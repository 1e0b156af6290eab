/**
 * The database of a backup. SQLite: SQLite's online backup, all pages in one step, so the copy is the database
 * at one instant (a read transaction, which in WAL mode holds back no writer) and the server keeps writing.
 * PostgreSQL: `pg_dump` (one snapshot of the whole database, custom format), restored with `pg_restore` in one
 * transaction into an empty database.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { PgExecutor } from '../../platform/store/postgres/executor.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { SqliteExecutor } from '../../platform/store/sqlite/executor.js';

const run = promisify(execFile);

/** Copies the SQLite database `src` to `dst` (a new file) with the owner and mode of `src`. */
export async function copySqlite(src: string, dst: string): Promise<void> {
  const db = new Database(src, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    // The largest step there is: every page in one step, so no writer between steps restarts the copy.
    await db.backup(dst, { progress: () => 0x7fffffff });
  } finally {
    db.close();
  }
  // One file, whole: the copy is given a rollback journal, so that reading it (the manifest's counts, a restore)
  // makes no -wal and -shm beside it. The server sets WAL again when it opens the database.
  const copy = new Database(dst);
  try {
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
  const st = fs.statSync(src);
  fs.chownSync(dst, st.uid, st.gid);
  fs.chmodSync(dst, st.mode & 0o777);
  // Opened here by root while no server had it open, SQLite made its journal files as root: the server's again.
  for (const f of [`${src}-wal`, `${src}-shm`]) if (fs.existsSync(f) && fs.statSync(f).uid !== st.uid) fs.chownSync(f, st.uid, st.gid);
}

/** A read-only executor over a SQLite file (a backup's copy): for reading its schema and counting sealed texts. */
export function openSqliteCopy(file: string): SqlExecutor {
  return new SqliteExecutor(new Database(file, { readonly: true, fileMustExist: true }));
}

export function openPostgres(url: string): SqlExecutor {
  return PgExecutor.connect(url, 1);
}

/** The schema versions the database is at, by module (module_migrations). */
export async function schemaVersions(db: SqlExecutor): Promise<Record<string, number>> {
  const { rows } = await db.query<{ module: string; version: number | string }>(
    'SELECT module, MAX(version) AS version FROM module_migrations GROUP BY module',
  );
  return Object.fromEntries(rows.map((r) => [r.module, Number(r.version)]));
}

/** Whether the PostgreSQL database holds no table, view or sequence of its own (anything but the catalogs). */
export async function postgresIsEmpty(db: SqlExecutor): Promise<boolean> {
  const { rows } = await db.query<{ n: number | string }>(
    "SELECT count(*) AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname NOT IN ('pg_catalog', 'information_schema') AND s.nspname NOT LIKE 'pg_toast%' AND s.nspname NOT LIKE 'pg_temp%'",
  );
  return Number(rows[0]?.n ?? 0) === 0;
}

/**
 * libpq's arguments for DEVBOXD_DATABASE_URL: the URL without its password (which would show in `ps`), the
 * password in PGPASSWORD.
 */
function libpq(url: string): { dbname: string; env: NodeJS.ProcessEnv } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = '';
  return { dbname: u.toString(), env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) } };
}

async function pgTool(tool: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  try {
    await run(tool, args, { env, maxBuffer: 1 << 24 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error(`${tool} is not installed: install postgresql-client of the server's version or newer`);
    throw new Error(`${tool} failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** Dumps the database to `file` (custom format: compressed, restored by pg_restore). */
export async function pgDump(url: string, file: string): Promise<void> {
  const { dbname, env } = libpq(url);
  await pgTool('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${file}`, `--dbname=${dbname}`], env);
}

/** Restores `file` into the (empty) database, all or nothing. */
export async function pgRestore(url: string, file: string): Promise<void> {
  const { dbname, env } = libpq(url);
  await pgTool('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--dbname=${dbname}`, file], env);
}
