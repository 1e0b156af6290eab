/** What the server sends the SQL process and what comes back (SQL results in the API's shape). */
export interface SqlJob {
  id: number;
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

export type SqlStepOutcome = { success: SqlResult } | { error: string };

export type SqlJobReply = { id: number; results: SqlStepOutcome[] } | { id: number; failure: string };
