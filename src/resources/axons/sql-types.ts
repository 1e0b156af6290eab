/** What the server sends the SQL process and what comes back (SQL results in the API's shape). */
export interface SqlJob {
  id: number;
  /** The axon's database file, a name in the process's working directory (the axons directory). */
  file: string;
  statements: { sql: string; params: unknown[] }[];
  /** All statements in one transaction, one result each. */
  batch: boolean;
  maxRows: number;
  maxBytes: number;
  maxDbBytes: number;
  timeoutMs: number;
}

export interface SqlResult {
  columns: { name: string; type: string }[];
  rows: unknown[][];
  meta: { changes: number; duration_ms: number; rows_read_limit_reached: boolean };
}

/** `tooLarge`: the statement ran but a value is larger than a result may hold. */
export type SqlStepOutcome = { success: SqlResult } | { error: string; tooLarge?: boolean };

/** `ready` once, when the process has loaded SQLite and waits for jobs; then one reply per job. */
export type SqlJobReply = { ready: true } | { id: number; results: SqlStepOutcome[] } | { id: number; failure: string };
