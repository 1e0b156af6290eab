import postgres from 'postgres';
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
/** The driver's own codes for a connection it could not open or lost, and the socket's. */
const CONNECTION = /^(CONNECT_TIMEOUT|CONNECTION_(CLOSED|ENDED|DESTROYED)|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT)$/;

/** The one switch from the driver's errors to domain errors. */
export function translatePgError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  const e = err as { code?: string; constraint_name?: string; message?: string };
  if (typeof e.code !== 'string') return err;
  const kind = CONSTRAINTS[e.code];
  if (kind) return constraintError(kind, e.constraint_name ?? e.message ?? e.code);
  if (UNAVAILABLE.test(e.code) || CONNECTION.test(e.code)) return unavailableError(e.message ?? e.code);
  // Class 22 (data exceptions: a NUL in text, a value out of range) is what a client sent: a 400, not a 500.
  if (e.code.startsWith('22')) return new DomainError('invalid_request', `a value cannot be stored: ${e.message ?? e.code}`);
  if (e.code === '40001' || e.code === '40P01' || e.code === '57014') return unavailableError(e.message ?? e.code);
  return err;
}

/**
 * Values as the shared SQL means them (and as node-postgres sent them): BIGINT (millisecond times, counts,
 * sequence numbers) as JS numbers, as every value stays below 2^53; text bound to a JSON parameter
 * (`?::jsonb`) is JSON already, not a string to encode; booleans as PostgreSQL reads them.
 */
const types = {
  int8: { to: 20, from: [20], serialize: (v: unknown) => String(v), parse: (v: string) => Number(v) },
  json: {
    to: 114,
    from: [114, 3802],
    serialize: (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v)),
    parse: (v: string) => JSON.parse(v) as unknown,
  },
  boolean: { to: 16, from: [16], serialize: (v: unknown) => (v === true ? 't' : v === false ? 'f' : String(v)), parse: (v: string) => v === 't' },
};

/** `?` placeholders (the shared SQL) to `$1, $2, …`, computed once per statement text. */
const texts = new Map<string, string>();
function toPg(sql: string): string {
  let text = texts.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    texts.set(sql, text);
  }
  return text;
}

type Types = { int8: number; json: unknown; boolean: boolean };
type Sql = postgres.Sql<Types>;
type Rows = postgres.RowList<postgres.Row[]>;

/**
 * postgres.js with a pool. Statements with parameters are prepared once per connection, then only bound and
 * executed (the hot lookups of every request), and requests in flight together share a connection's writes
 * (pipelining): far less CPU per query, in this process and in the server, than node-postgres (bench/README).
 * Texts without parameters (migrations, several statements at once) go as simple queries. A transaction
 * holds one connection from BEGIN to COMMIT and hands out an executor bound to it, so unrelated requests
 * never join it.
 */
export class PgExecutor implements SqlExecutor {
  readonly dialect = 'postgres' as const;

  private constructor(
    private readonly sql: Sql | postgres.TransactionSql<Types>,
    private readonly root: Sql,
    private readonly inTransaction: boolean,
  ) {}

  static connect(url: string, max = 10): PgExecutor {
    const sql = postgres(url, {
      max,
      types,
      // node-postgres sent undefined as NULL; the stores rely on it for optional columns.
      transform: { undefined: null },
      // Notices ("relation already exists, skipping") are not errors, and stdout carries the JSON logs.
      onnotice: () => undefined,
    }) as unknown as Sql;
    return new PgExecutor(sql, sql, false);
  }

  async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    try {
      const res = (await this.sql.unsafe(toPg(sql), params as postgres.ParameterOrJSON<never>[], { prepare: params.length > 0 })) as unknown as Rows | Rows[];
      // Several statements in one text (migrations) answer one result each: the last one counts.
      const r = (Array.isArray(res[0]) ? (res as Rows[]).at(-1)! : res) as Rows;
      // Plain arrays: the driver's Result subclass would carry over to every `rows.map(…)` (species).
      return { rows: Array.from(r) as R[], rowCount: r.count ?? r.length };
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async script(sql: string): Promise<void> {
    try {
      await this.sql.unsafe(sql);
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this);
    try {
      return (await this.root.begin((tx) => fn(new PgExecutor(tx, this.root, true)))) as T;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async close(): Promise<void> {
    if (!this.inTransaction) await this.root.end({ timeout: 5 });
  }
}
