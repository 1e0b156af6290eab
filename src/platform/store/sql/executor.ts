/**
 * What the shared SQL stores need of a database: run one statement (`?` placeholders; the PostgreSQL
 * executor numbers them) and open a transaction. One executor per dialect translates its driver's errors to
 * domain errors, so the stores and the services above them never see SQLITE_* codes or SQLSTATEs.
 */
export interface QueryResult<R> {
  rows: R[];
  /** Rows a write changed (or a query returned). */
  rowCount: number;
}

export type Dialect = 'sqlite' | 'postgres';

export interface SqlExecutor {
  readonly dialect: Dialect;
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs `fn` in one transaction on an executor bound to it; commit on resolve, rollback on throw. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Runs several `;`-separated statements without parameters (a migration). */
  script(sql: string): Promise<void>;
  close(): Promise<void>;
}

/** `?, ?, ?` for a list of values. */
export const marks = (values: readonly unknown[]): string => values.map(() => '?').join(', ');
