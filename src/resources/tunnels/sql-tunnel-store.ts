import type { SqlExecutor } from '../../platform/store/sql/executor.js';

/** A tunnel as stored: the token still sealed (the service opens it). */
export interface TunnelRow {
  devbox_id: string;
  tunnel_key: string;
  auth_mode: string;
  auth_token_sealed: string | null;
  http_keep_alive: number;
  wake_on_http: number;
  create_time_ms: number;
}

/** The devbox_tunnels table over either dialect; built over `store.db` (or a transaction's `tx.db`). */
export class SqlTunnelStore {
  constructor(private readonly db: SqlExecutor) {}

  /** False when the box has a tunnel already (the insert is conditional, so two enables cannot both win). */
  async insert(r: TunnelRow): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO devbox_tunnels (devbox_id, tunnel_key, auth_mode, auth_token_sealed, http_keep_alive, wake_on_http, create_time_ms)
       SELECT ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM devbox_tunnels WHERE devbox_id = ?)`,
      [r.devbox_id, r.tunnel_key, r.auth_mode, r.auth_token_sealed, r.http_keep_alive, r.wake_on_http, r.create_time_ms, r.devbox_id],
    );
    return rowCount > 0;
  }

  async byDevbox(devboxId: string): Promise<TunnelRow | undefined> {
    const { rows } = await this.db.query<TunnelRow>('SELECT * FROM devbox_tunnels WHERE devbox_id = ?', [devboxId]);
    return rows[0];
  }

  async byKey(key: string): Promise<TunnelRow | undefined> {
    const { rows } = await this.db.query<TunnelRow>('SELECT * FROM devbox_tunnels WHERE tunnel_key = ?', [key]);
    return rows[0];
  }

  /** The removed row's key, or undefined when the box had no tunnel. */
  async remove(devboxId: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ tunnel_key: string }>('DELETE FROM devbox_tunnels WHERE devbox_id = ? RETURNING tunnel_key', [devboxId]);
    return rows[0]?.tunnel_key;
  }
}
