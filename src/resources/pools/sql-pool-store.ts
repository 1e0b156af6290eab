import type { SqlExecutor } from '../../platform/store/sql/executor.js';

/** A size's pool as `devboxd pools set` gave it. */
export interface PoolSetting {
  size: string;
  count: number;
  updateTimeMs: number;
}

/** The `warm_pools` table: what `devboxd pools` sets, read by every node's server on its refill tick. */
export class SqlPoolStore {
  constructor(private readonly db: SqlExecutor) {}

  async list(): Promise<PoolSetting[]> {
    const { rows } = await this.db.query<{ size: string; count: number; update_time_ms: number }>('SELECT * FROM warm_pools ORDER BY size');
    return rows.map((r) => ({ size: r.size, count: Number(r.count), updateTimeMs: Number(r.update_time_ms) }));
  }

  async set(size: string, count: number, nowMs = Date.now()): Promise<void> {
    await this.db.query(
      'INSERT INTO warm_pools (size, count, update_time_ms) VALUES (?, ?, ?) ON CONFLICT (size) DO UPDATE SET count = excluded.count, update_time_ms = excluded.update_time_ms',
      [size, count, nowMs],
    );
  }

  /** Forgets every setting: the pools are DEVBOXD_WARM_POOL's again. */
  async clear(): Promise<number> {
    return (await this.db.query('DELETE FROM warm_pools')).rowCount;
  }
}
