import type { Db } from './db.js';
import type { IdempotencyStore, StoredResponse } from '../types.js';

export class SqliteIdempotencyStore implements IdempotencyStore {
  constructor(private readonly db: Db) {}

  get(accountId: string, requestId: string, route: string, sinceMs: number): StoredResponse | undefined {
    return this.db
      .prepare(
        `SELECT status, body FROM idempotency
         WHERE account_id = ? AND request_id = ? AND route = ? AND create_time_ms >= ?`,
      )
      .get(accountId, requestId, route, sinceMs) as StoredResponse | undefined;
  }

  put(accountId: string, requestId: string, route: string, r: StoredResponse): void {
    this.db
      .prepare(
        `INSERT OR REPLACE INTO idempotency (account_id, request_id, route, status, body, create_time_ms)
         VALUES (?, ?, ?, ?, ?, ?)`,
      )
      .run(accountId, requestId, route, r.status, r.body, Date.now());
  }

  prune(beforeMs: number): void {
    this.db.prepare('DELETE FROM idempotency WHERE create_time_ms < ?').run(beforeMs);
  }
}
