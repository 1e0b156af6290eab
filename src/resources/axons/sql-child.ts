/**
 * The process that runs axon SQL (started by SqlRunner through sql-process.ts, as one bundled script from its
 * runtime directory, in the axons directory, as an unprivileged uid): better-sqlite3 runs a statement
 * synchronously and cannot be interrupted from JavaScript, so a statement runs here, where the parent can kill
 * it at its time limit without stopping the server. One job at a time; the database file is opened per job.
 */
import Database from 'better-sqlite3';
import type { SqlJob, SqlJobReply, SqlStepOutcome } from './sql-types.js';

type Db = Database.Database;

// The native addon, from the runtime directory (sql-runtime.ts) by the path the parent gives: loaded once, before
// the process says it is ready, so an addon that cannot load is a failed start, not a failed job.
const addon = { exports: {} as object };
process.dlopen(addon, process.env.DEVBOXD_SQLITE_ADDON!);
// The typings know only the path form of this option; better-sqlite3 takes the loaded addon as well.
const nativeBinding = addon.exports as unknown as string;

// Confined (sql-process.ts): this process's own ids, taken here rather than before the exec, which leaves the
// process non-dumpable, and before any job; changing them drops the last capabilities.
if (process.env.DEVBOXD_SQL_IDS) {
  const [uid, gid] = process.env.DEVBOXD_SQL_IDS.split(':').map(Number) as [number, number];
  process.setgroups!([]);
  process.setgid!(gid);
  process.setuid!(uid);
}
/** An axon's database: a plain name in the working directory, never a path. */
const FILE_NAME = /^[A-Za-z0-9_-]+\.sqlite$/;

/**
 * The statement kinds an axon's SQL may be, by leading keyword. An allow-list, not a deny-list: ATTACH, DETACH,
 * PRAGMA and VACUUM reach beyond the axon's own file or change its limits, and some PRAGMAs take effect while
 * the statement is merely compiled, so anything else is refused before better-sqlite3 sees it.
 */
const ALLOWED = new Set(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'REPLACE', 'WITH', 'VALUES', 'CREATE', 'DROP', 'ALTER', 'ANALYZE', 'REINDEX']);
/** Transaction control: harmless alone (the file is closed, rolling back, after the job), refused in a batch. */
const TRANSACTION = new Set(['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE']);
/** Opcodes that the allowed kinds never compile to; a second check that does not rely on reading the text. */
const REFUSED_OPS = new Set(['Vacuum', 'JournalMode', 'MaxPgcnt', 'Pragma']);
const REFUSED_FUNCTIONS = /^sqlite_(attach|detach)\b/;

/**
 * The SQL without what comes before its first keyword: blanks, comments and empty statements (';'), which
 * SQLite skips too, so the keyword read here is the one SQLite compiles.
 */
function stripLead(sql: string): string {
  let s = sql;
  for (;;) {
    s = s.replace(/^[\s;]+/, '');
    if (s.startsWith('--')) {
      const nl = s.indexOf('\n');
      s = nl < 0 ? '' : s.slice(nl + 1);
    } else if (s.startsWith('/*')) {
      const end = s.indexOf('*/');
      s = end < 0 ? '' : s.slice(end + 2);
    } else return s;
  }
}

/** Why the statement may not run, or null. Checked on the text first, then on its compiled program. */
function refusal(db: Db, sql: string, args: unknown[], batch: boolean): string | null {
  const keyword = (/^[A-Za-z]+/.exec(sql)?.[0] ?? '').toUpperCase();
  if (TRANSACTION.has(keyword)) return batch ? `${keyword} is not allowed in a batch: the batch is one transaction already` : null;
  if (!ALLOWED.has(keyword))
    return `${keyword || 'this kind of'} statements are not allowed on an axon's database (allowed: ${[...ALLOWED, ...TRANSACTION].join(', ')})`;
  // Table-valued pragma functions (pragma_database_list shows the host's paths) by name: an identifier cannot
  // be split by comments or spelled another way, so the text tells.
  if (/pragma_/i.test(sql)) return "pragma_* functions are not allowed on an axon's database";
  for (const op of db.prepare(`EXPLAIN ${sql}`).all(...args) as { opcode: string; p4: unknown }[]) {
    if (REFUSED_OPS.has(op.opcode) || (/^(Pure)?Function/.test(op.opcode) && REFUSED_FUNCTIONS.test(String(op.p4 ?? '')))) {
      return "this statement reaches beyond the axon's database and is not allowed";
    }
  }
  return null;
}

/**
 * A tripwire after each statement: the connection still sees only the axon's file (and its temp store). If
 * not, the whole job fails and none of its rows leave this process.
 */
function assertConfined(db: Db): void {
  const n = db.prepare("SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')").pluck().get();
  if (n !== 0) throw new Error("a statement reached beyond the axon's database; the job was stopped");
}

function bindable(v: unknown): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

/** What a value takes in the result at least: its base64 for a BLOB, its UTF-8 for text. */
function cellBytes(v: unknown): number {
  if (Buffer.isBuffer(v)) return Math.ceil(v.length / 3) * 4;
  if (typeof v === 'string') return Buffer.byteLength(v);
  return 0;
}

function cell(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (typeof v === 'bigint') return v.toString();
  return v;
}

function step(db: Db, text: string, params: unknown[], job: SqlJob): SqlStepOutcome {
  const started = performance.now();
  try {
    const sql = stripLead(text);
    const args = params.map(bindable);
    const refused = refusal(db, sql, args, job.batch);
    if (refused) return { error: refused };
    return execute(db, sql, args, job, started);
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function execute(db: Db, sql: string, args: unknown[], job: SqlJob, started: number): SqlStepOutcome {
  const stmt = db.prepare(sql);
  if (!stmt.reader) {
    const info = stmt.run(...args);
    return { success: { columns: [], rows: [], meta: { changes: info.changes, duration_ms: performance.now() - started, rows_read_limit_reached: false } } };
  }
  const columns = stmt.columns().map((c) => ({ name: c.name, type: c.type ?? '' }));
  const rows: unknown[][] = [];
  let bytes = 0;
  let truncated = false;
  for (const raw of stmt.raw(true).iterate(...args) as IterableIterator<unknown[]>) {
    if (rows.length >= job.maxRows) {
      truncated = true;
      break;
    }
    // Sized before any base64 or JSON copy is made: a value a result cannot hold is refused, a row that does
    // not fit ends the result, so no conversion works on more than the result's limit.
    let estimate = 0;
    for (const [c, v] of raw.entries()) {
      const n = cellBytes(v);
      if (n > job.maxBytes) {
        const what = Buffer.isBuffer(v) ? `a BLOB of ${v.length} bytes (${n} in base64)` : `a text of ${n} bytes`;
        return {
          error: `row ${rows.length + 1}, column ${columns[c]?.name ?? c}: ${what} is more than a result may hold (${job.maxBytes} bytes); select a part of it, e.g. with substr()`,
          tooLarge: true,
        };
      }
      estimate += n;
    }
    if (bytes + estimate > job.maxBytes) {
      truncated = true;
      break;
    }
    const row = raw.map(cell);
    bytes += JSON.stringify(row).length;
    if (bytes > job.maxBytes) {
      truncated = true;
      break;
    }
    rows.push(row);
  }
  return { success: { columns, rows, meta: { changes: 0, duration_ms: performance.now() - started, rows_read_limit_reached: truncated } } };
}

function run(job: SqlJob): SqlJobReply {
  if (!FILE_NAME.test(job.file)) return { id: job.id, failure: 'not an axon database name' };
  let db: Db;
  try {
    // The server creates the file; a missing one was deleted with its axon and is not made again here.
    db = new Database(job.file, { fileMustExist: true, nativeBinding });
  } catch (err) {
    return { id: job.id, failure: (err as Error).message };
  }
  try {
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    db.pragma(`max_page_count = ${Math.ceil(job.maxDbBytes / pageSize)}`);
    db.pragma('temp_store = MEMORY');
    // SQLite's own memory (sorts, the temp store, caches) is outside the JS heap's limit: bounded here.
    db.pragma(`hard_heap_limit = ${256 * 1024 * 1024}`);
    db.pragma(`busy_timeout = ${job.timeoutMs}`);
    if (!job.batch) {
      const result = step(db, job.statements[0]!.sql, job.statements[0]!.params, job);
      assertConfined(db);
      return { id: job.id, results: [result] };
    }
    const results: SqlStepOutcome[] = [];
    db.exec('BEGIN IMMEDIATE');
    let failed = -1;
    for (const [i, s] of job.statements.entries()) {
      if (failed >= 0) {
        results.push({ error: `not run: statement ${failed} failed and the batch was rolled back` });
        continue;
      }
      const r = step(db, s.sql, s.params, job);
      assertConfined(db);
      if ('error' in r) failed = i;
      results.push(r);
    }
    if (failed >= 0 || !db.inTransaction) {
      if (db.inTransaction) db.exec('ROLLBACK');
    } else db.exec('COMMIT');
    return { id: job.id, results };
  } finally {
    db.close();
  }
}

// Files this process makes (journals) are for the SQL processes' group only.
process.umask(0o007);
process.on('message', (job: SqlJob) => {
  let reply: SqlJobReply;
  try {
    reply = run(job);
  } catch (err) {
    reply = { id: job.id, failure: (err as Error).message };
  }
  process.send!(reply);
});
process.send!({ ready: true } satisfies SqlJobReply);
