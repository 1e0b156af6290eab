import pg from 'pg';
import { DomainError } from '../../errors.js';
import { constraintError, unavailableError, type ConstraintKind } from '../sql/errors.js';
import type { QueryResult, SqlExecutor } from '../sql/executor.js';

/** SQLSTATEs of integrity violations (class 23), mapped to driver-neutral kinds. */
const CONSTRAINTS: Record<string, ConstraintKind> = {
  '23505': 'unique',
  '23503': 'foreign_key',
  '23514': 'check',
  '23502': 'not_null',
};

/** Classes meaning the server cannot answer now: connection (08), resources (53), shutdown (57P0x). */
const UNAVAILABLE = /^(08|53|57P0)/;

/** The one switch from node-postgres errors to domain errors. */
export function translatePgError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  const e = err as { code?: string; constraint?: string; message?: string };
  if (typeof e.code !== 'string') return err;
  const kind = CONSTRAINTS[e.code];
  if (kind) return constraintError(kind, e.constraint ?? e.message ?? e.code);
  if (UNAVAILABLE.test(e.code) || e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') return unavailableError(e.message ?? e.code);
  // Class 22 (data exceptions: a NUL in text, a value out of range) is what a client sent: a 400, not a 500.
  if (e.code.startsWith('22')) return new DomainError('invalid_request', `a value cannot be stored: ${e.message ?? e.code}`);
  if (e.code === '40001' || e.code === '40P01' || e.code === '57014') return unavailableError(e.message ?? e.code);
  return err;
}

// BIGINT (millisecond times, counts, sequence numbers) as JS numbers: every value stays below 2^53.
const INT8 = 20;
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * `?` placeholders (the shared SQL) to `$1, $2, …`, computed once per statement text, with a name: a named
 * statement is parsed and planned once per connection, then only bound and executed (the hot lookups of
 * every request). Texts without parameters (migrations, several statements at once) go unnamed.
 */
interface PgStatement {
  text: string;
  name: string | undefined;
}
const statements = new Map<string, PgStatement>();
function toPg(sql: string): PgStatement {
  let st = statements.get(sql);
  if (st === undefined) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    st = { text, name: n > 0 ? `s${statements.size}` : undefined };
    statements.set(sql, st);
  }
  return st;
}

type Queryable = pg.Pool | pg.PoolClient;

/**
 * node-postgres with a pool. Statements run on any pooled connection; a transaction holds one connection
 * from BEGIN to COMMIT and hands out an executor bound to it, so unrelated requests never join it.
 */
export class PgExecutor implements SqlExecutor {
  readonly dialect = 'postgres' as const;

  private constructor(
    private readonly conn: Queryable,
    private readonly pool: pg.Pool,
    private readonly inTransaction: boolean,
  ) {}

  static connect(url: string, max = 10): PgExecutor {
    const pool = new pg.Pool({ connectionString: url, max, types });
    // An idle connection that fails (server restart) must not crash the process; the next query reconnects.
    pool.on('error', () => undefined);
    return new PgExecutor(pool, pool, false);
  }

  async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    try {
      const st = toPg(sql);
      const res = await this.conn.query(st.name ? { name: st.name, text: st.text, values: params as unknown[] } : st.text, params as unknown[]);
      // Several statements in one text (migrations) answer one result each: the last one counts.
      const r = (Array.isArray(res) ? res.at(-1) : res) as pg.QueryResult;
      return { rows: r.rows as R[], rowCount: r.rowCount ?? r.rows.length };
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async script(sql: string): Promise<void> {
    try {
      await this.conn.query(sql);
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this);
    const client = await this.pool.connect().catch((err) => {
      throw translatePgError(err);
    });
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(new PgExecutor(client, this.pool, true));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw translatePgError(err);
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    if (!this.inTransaction) await this.pool.end();
  }
}
