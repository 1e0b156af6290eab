import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { NodeRecord, NodeState } from './types.js';

interface Row {
  name: string;
  address: string | null;
  api_url: string | null;
  cpu_millicores: number;
  memory_bytes: number;
  disk_bytes: number;
  state: NodeState;
  heartbeat_ms: number;
  lease_expires_ms: number;
  grace_ms: number;
  started_at_ms: number;
  stopped_at_ms: number | null;
  lost_at_ms: number | null;
  version: string;
}

const fromRow = (r: Row): NodeRecord => ({
  name: r.name,
  address: r.address,
  apiUrl: r.api_url,
  capacity: { cpuCores: r.cpu_millicores / 1000, memoryBytes: r.memory_bytes, diskBytes: r.disk_bytes },
  state: r.state,
  heartbeatMs: r.heartbeat_ms,
  leaseExpiresMs: r.lease_expires_ms,
  graceMs: r.grace_ms,
  startedAtMs: r.started_at_ms,
  stoppedAtMs: r.stopped_at_ms,
  lostAtMs: r.lost_at_ms,
  version: r.version,
});

/** A lost node that registers or renews again is active; a draining one stays draining (the operator's word). */
const BACK = "CASE WHEN nodes.state = 'lost' THEN 'active' ELSE nodes.state END";

/**
 * The registry's rows. A node writes its own row; other servers change it only with a conditional update
 * (`markLost`, `setState`), so a renewal and a declaration of loss never both win.
 */
export class SqlNodeStore {
  constructor(private readonly db: SqlExecutor) {}

  /** Inserts or refreshes this node's row at start: a fresh lease, no stop, not lost. */
  async register(n: Omit<NodeRecord, 'state' | 'stoppedAtMs' | 'lostAtMs'>): Promise<NodeRecord> {
    const { rows } = await this.db.query<Row>(
      `INSERT INTO nodes (name, address, api_url, cpu_millicores, memory_bytes, disk_bytes, state, heartbeat_ms, lease_expires_ms, grace_ms, started_at_ms, version)
       VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET address = excluded.address, api_url = excluded.api_url, cpu_millicores = excluded.cpu_millicores,
         memory_bytes = excluded.memory_bytes, disk_bytes = excluded.disk_bytes, state = ${BACK},
         heartbeat_ms = excluded.heartbeat_ms, lease_expires_ms = excluded.lease_expires_ms, grace_ms = excluded.grace_ms,
         started_at_ms = excluded.started_at_ms, version = excluded.version, stopped_at_ms = NULL, lost_at_ms = NULL
       RETURNING *`,
      [
        n.name,
        n.address,
        n.apiUrl,
        Math.round(n.capacity.cpuCores * 1000),
        n.capacity.memoryBytes,
        n.capacity.diskBytes,
        n.heartbeatMs,
        n.leaseExpiresMs,
        n.graceMs,
        n.startedAtMs,
        n.version,
      ],
    );
    return fromRow(rows[0]!);
  }

  /** Renews `name`'s lease; the row as it is now, or undefined when it is gone (forgotten by an operator). */
  async renew(name: string, nowMs: number, untilMs: number): Promise<NodeRecord | undefined> {
    const { rows } = await this.db.query<Row>(
      `UPDATE nodes SET heartbeat_ms = ?, lease_expires_ms = ?, state = ${BACK}, lost_at_ms = NULL, stopped_at_ms = NULL WHERE name = ? RETURNING *`,
      [nowMs, untilMs, name],
    );
    return rows[0] && fromRow(rows[0]);
  }

  /** A graceful stop: the row stays, and the node is not declared lost while it is down. */
  async stopped(name: string, nowMs: number): Promise<void> {
    await this.db.query('UPDATE nodes SET stopped_at_ms = ? WHERE name = ?', [nowMs, name]);
  }

  async get(name: string): Promise<NodeRecord | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM nodes WHERE name = ?', [name]);
    return rows[0] && fromRow(rows[0]);
  }

  async list(): Promise<NodeRecord[]> {
    const { rows } = await this.db.query<Row>('SELECT * FROM nodes ORDER BY name');
    return rows.map(fromRow);
  }

  /** Nodes silent past their lease and grace at `nowMs` (not lost yet, not stopped gracefully). */
  async overdue(nowMs: number): Promise<NodeRecord[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT * FROM nodes WHERE state <> 'lost' AND stopped_at_ms IS NULL AND lease_expires_ms + grace_ms < ? ORDER BY name`,
      [nowMs],
    );
    return rows.map(fromRow);
  }

  /**
   * Declares `name` lost if it still is overdue at `nowMs`: the compare-and-set that lets one server of all
   * act on a lost node. In a transaction, PostgreSQL holds the row until it ends, so the node registering
   * again waits until its boxes' failures are committed (and then adopts none of them).
   */
  async markLost(name: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE nodes SET state = 'lost', lost_at_ms = ? WHERE name = ? AND state <> 'lost' AND stopped_at_ms IS NULL AND lease_expires_ms + grace_ms < ?`,
      [nowMs, name, nowMs],
    );
    return rowCount > 0;
  }

  /** Moves `name` to `to` if it is in one of `from`; the row after, or undefined when it was not. */
  async setState(name: string, from: readonly NodeState[], to: NodeState): Promise<NodeRecord | undefined> {
    const { rows } = await this.db.query<Row>(`UPDATE nodes SET state = ? WHERE name = ? AND state IN (${from.map(() => '?').join(', ')}) RETURNING *`, [
      to,
      name,
      ...from,
    ]);
    return rows[0] && fromRow(rows[0]);
  }

  /** Removes a lost node's row (a server decommissioned for good); false when it is not lost. */
  async forget(name: string): Promise<boolean> {
    const { rowCount } = await this.db.query("DELETE FROM nodes WHERE name = ? AND state = 'lost'", [name]);
    return rowCount > 0;
  }
}
