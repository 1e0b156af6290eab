import type { SqlExecutor } from '../../platform/store/sql/executor.js';

/** A pool as `devboxd pools set` gave it: a size of the default image ('') or of a public blueprint. */
export interface PoolSetting {
  size: string;
  blueprintId: string;
  count: number;
  updateTimeMs: number;
}

/** The `warm_pools` table: what `devboxd pools` sets, read by every node's server on its refill tick. */
export class SqlPoolStore {
  constructor(private readonly db: SqlExecutor) {}

  async list(): Promise<PoolSetting[]> {
    const { rows } = await this.db.query<{ size: string; blueprint_id: string; count: number; update_time_ms: number }>(
      'SELECT * FROM warm_pools ORDER BY blueprint_id, size',
    );
    return rows.map((r) => ({ size: r.size, blueprintId: r.blueprint_id, count: Number(r.count), updateTimeMs: Number(r.update_time_ms) }));
  }

  async set(size: string, blueprintId: string, count: number, nowMs = Date.now()): Promise<void> {
    await this.db.query(
      `INSERT INTO warm_pools (size, blueprint_id, count, update_time_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (size, blueprint_id) DO UPDATE SET count = excluded.count, update_time_ms = excluded.update_time_ms`,
      [size, blueprintId, count, nowMs],
    );
  }

  /** Forgets every setting: the pools are DEVBOXD_WARM_POOL's again. */
  async clear(): Promise<number> {
    return (await this.db.query('DELETE FROM warm_pools')).rowCount;
  }
}
