import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { Eviction, EvictionReason } from './types.js';

interface Row {
  devbox_id: string;
  account_id: string;
  reason: string;
  deadline_ms: number | string;
  create_time_ms: number | string;
}

const toEviction = (r: Row): Eviction => ({
  devboxId: r.devbox_id,
  accountId: r.account_id,
  reason: r.reason as EvictionReason,
  deadlineMs: Number(r.deadline_ms),
  createTimeMs: Number(r.create_time_ms),
});

/** The devbox_evictions table over either dialect; built over `store.db`. */
export class SqlEvictionStore {
  constructor(private readonly db: SqlExecutor) {}

  /**
   * Records a pending eviction unless the box has one already (a conditional insert: two evictions of one box,
   * a drain and a pressure event, cannot both schedule it). Resolves the eviction that stands.
   */
  async schedule(e: Eviction): Promise<{ eviction: Eviction; created: boolean }> {
    const { rowCount } = await this.db.query(
      `INSERT INTO devbox_evictions (devbox_id, account_id, reason, deadline_ms, create_time_ms)
       SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM devbox_evictions WHERE devbox_id = ?)`,
      [e.devboxId, e.accountId, e.reason, e.deadlineMs, e.createTimeMs, e.devboxId],
    );
    if (rowCount > 0) return { eviction: e, created: true };
    const { rows } = await this.db.query<Row>('SELECT * FROM devbox_evictions WHERE devbox_id = ?', [e.devboxId]);
    return { eviction: rows[0] ? toEviction(rows[0]) : e, created: false };
  }

  /** The account's pending evictions: only of boxes still running (a row left by a crash never shows). */
  async pending(accountId: string): Promise<Eviction[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT e.* FROM devbox_evictions e JOIN devboxes d ON d.id = e.devbox_id
       WHERE e.account_id = ? AND d.status = 'running' ORDER BY e.deadline_ms, e.devbox_id`,
      [accountId],
    );
    return rows.map(toEviction);
  }

  async remove(devboxId: string): Promise<void> {
    await this.db.query('DELETE FROM devbox_evictions WHERE devbox_id = ?', [devboxId]);
  }

  /**
   * At start: rows a stopped server left, of boxes that no longer run or that `node` runs (a server killed
   * during an eviction's grace adopts the box running, and nobody evicts it any more).
   */
  async removeStale(node: string): Promise<void> {
    await this.db.query(`DELETE FROM devbox_evictions WHERE devbox_id NOT IN (SELECT id FROM devboxes WHERE status = 'running' AND node <> ?)`, [node]);
  }
}
