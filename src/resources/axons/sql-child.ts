/**
 * The process that runs axon SQL (forked by SqlRunner): better-sqlite3 runs a statement synchronously and
 * cannot be interrupted from JavaScript, so a statement runs here, where the parent can kill it at its time
 * limit without stopping the server. One job at a time; the database file is opened per job.
 */
import Database from 'better-sqlite3';
import type { SqlJob, SqlJobReply, SqlStepOutcome } from './sql-types.js';

/** Statements that reach beyond the axon's own file, or change its limits, whatever follows them. */
const REFUSED = new Set(['ATTACH', 'DETACH', 'PRAGMA', 'VACUUM']);
/** Transaction control inside a batch would break its all-or-nothing. */
const IN_BATCH_REFUSED = new Set(['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE']);

/** The first keyword, after blanks and comments. */
function firstKeyword(sql: string): string {
  let s = sql;
  for (;;) {
    s = s.trimStart();
    if (s.startsWith('--')) {
      const nl = s.indexOf('\n');
      s = nl < 0 ? '' : s.slice(nl + 1);
    } else if (s.startsWith('/*')) {
      const end = s.indexOf('*/');
      s = end < 0 ? '' : s.slice(end + 2);
    } else break;
  }
  return (/^[A-Za-z]+/.exec(s)?.[0] ?? '').toUpperCase();
}

function bindable(v: unknown): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function cell(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (typeof v === 'bigint') return v.toString();
  return v;
}

function step(db: Database.Database, sql: string, params: unknown[], job: SqlJob): SqlStepOutcome {
  const keyword = firstKeyword(sql);
  if (REFUSED.has(keyword)) return { error: `${keyword} statements are not allowed on an axon's database` };
  if (job.batch && IN_BATCH_REFUSED.has(keyword)) return { error: `${keyword} is not allowed in a batch: the batch is one transaction already` };
  const started = performance.now();
  try {
    const stmt = db.prepare(sql);
    const args = params.map(bindable);
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
      const row = raw.map(cell);
      bytes += JSON.stringify(row).length;
      if (bytes > job.maxBytes) {
        truncated = true;
        break;
      }
      rows.push(row);
    }
    return { success: { columns, rows, meta: { changes: 0, duration_ms: performance.now() - started, rows_read_limit_reached: truncated } } };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function run(job: SqlJob): SqlJobReply {
  const db = new Database(job.file);
  try {
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    db.pragma(`max_page_count = ${Math.ceil(job.maxDbBytes / pageSize)}`);
    db.pragma('temp_store = MEMORY');
    // SQLite's own memory (sorts, the temp store, caches) is outside the JS heap's limit: bounded here.
    db.pragma(`hard_heap_limit = ${256 * 1024 * 1024}`);
    db.pragma(`busy_timeout = ${job.timeoutMs}`);
    if (!job.batch) return { id: job.id, results: [step(db, job.statements[0]!.sql, job.statements[0]!.params, job)] };
    const results: SqlStepOutcome[] = [];
    db.exec('BEGIN IMMEDIATE');
    let failed = -1;
    for (const [i, s] of job.statements.entries()) {
      if (failed >= 0) {
        results.push({ error: `not run: statement ${failed} failed and the batch was rolled back` });
        continue;
      }
      const r = step(db, s.sql, s.params, job);
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

process.on('message', (job: SqlJob) => {
  let reply: SqlJobReply;
  try {
    reply = run(job);
  } catch (err) {
    reply = { id: job.id, failure: (err as Error).message };
  }
  process.send!(reply);
});
