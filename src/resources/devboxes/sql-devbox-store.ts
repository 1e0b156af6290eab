import { marks, type SqlExecutor } from '../../platform/store/sql/executor.js';
import { searchFilter } from '../../platform/store/sql/name-filter.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import type { Devbox, DevboxStatus } from './types.js';
import type { ApiKey, Page, PageQuery } from '../../platform/store/types.js';
import type { DevboxListFilter, DevboxStore, DevboxTransition } from './devbox-store.js';
import { keyJoin } from '../accounts/index.js';

interface Row {
  id: string;
  account_id: string;
  name: string | null;
  status: DevboxStatus;
  create_time_ms: number;
  end_time_ms: number | null;
  failure_reason: Devbox['failureReason'];
  shutdown_reason: Devbox['shutdownReason'];
  metadata: string;
  launch_parameters: string;
  environment: string;
  entrypoint: string | null;
  blueprint_id: string | null;
  snapshot_id: string | null;
  layers: string;
  sandbox: string;
  state_transitions: string;
  keep_alive_at_ms: number;
  node: string;
  view_parts: string | null;
}

const fromRow = (r: Row): Devbox => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status,
  createTimeMs: r.create_time_ms,
  endTimeMs: r.end_time_ms,
  failureReason: r.failure_reason,
  shutdownReason: r.shutdown_reason,
  metadata: JSON.parse(r.metadata),
  launchParameters: JSON.parse(r.launch_parameters),
  environment: JSON.parse(r.environment),
  entrypoint: r.entrypoint,
  blueprintId: r.blueprint_id,
  snapshotId: r.snapshot_id,
  layers: JSON.parse(r.layers),
  sandbox: JSON.parse(r.sandbox),
  stateTransitions: JSON.parse(r.state_transitions),
  keepAliveAtMs: r.keep_alive_at_ms,
  node: r.node,
  viewParts: r.view_parts === null ? null : r.view_parts.split(',').filter(Boolean),
});

const toRow = (d: Devbox): Row => ({
  id: d.id,
  account_id: d.accountId,
  name: d.name,
  status: d.status,
  create_time_ms: d.createTimeMs,
  end_time_ms: d.endTimeMs,
  failure_reason: d.failureReason,
  shutdown_reason: d.shutdownReason,
  metadata: JSON.stringify(d.metadata),
  launch_parameters: JSON.stringify(d.launchParameters),
  environment: JSON.stringify(d.environment),
  entrypoint: d.entrypoint,
  blueprint_id: d.blueprintId,
  snapshot_id: d.snapshotId,
  layers: JSON.stringify(d.layers),
  sandbox: JSON.stringify(d.sandbox),
  state_transitions: JSON.stringify(d.stateTransitions),
  keep_alive_at_ms: d.keepAliveAtMs,
  node: d.node,
  // ',tunnel,mcp,': a part is recorded by appending `name,`, the same SQL on both dialects (markView).
  view_parts: d.viewParts ? `,${d.viewParts.map((p) => `${p},`).join('')}` : null,
});

const COLUMNS = Object.keys(toRow({ sandbox: {}, stateTransitions: [] } as unknown as Devbox));
const INSERT = `INSERT INTO devboxes (${COLUMNS.join(', ')}) VALUES (${marks(COLUMNS)})`;
const GET_WITH_KEY = `SELECT ${keyJoin.select('k')}, d.* FROM api_keys k LEFT JOIN devboxes d ON d.id = ? AND d.account_id = k.account_id WHERE k.secret_hash = ?`;
const TERMINAL_SQL = "('failure', 'shutdown')";

export class SqlDevboxStore implements DevboxStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(d: Devbox): Promise<void> {
    const row = toRow(d) as unknown as Record<string, unknown>;
    await this.db.query(
      INSERT,
      COLUMNS.map((c) => row[c]),
    );
  }

  async claimPooled(d: Devbox): Promise<boolean> {
    const row = toRow(d) as unknown as Record<string, unknown>;
    const set = COLUMNS.filter((c) => c !== 'id');
    const r = await this.db.query(`UPDATE devboxes SET ${set.map((c) => `${c} = ?`).join(', ')} WHERE id = ? AND account_id = '' AND status = 'running'`, [
      ...set.map((c) => row[c]),
      d.id,
    ]);
    return r.rowCount > 0;
  }

  async get(accountId: string, id: string): Promise<Devbox | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM devboxes WHERE account_id = ? AND id = ?', [accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  /**
   * The key with `keyHash` and, if that key's account has it, the box: the request's key check and the
   * route's read in one statement (one round trip, one statement's cost in both processes).
   */
  async getWithKey(keyHash: string, id: string): Promise<{ key?: ApiKey; devbox?: Devbox }> {
    const { rows } = await this.db.query<Row & Record<string, unknown>>(GET_WITH_KEY, [id, keyHash]);
    const row = rows[0];
    if (!row) return {};
    return { key: keyJoin.from(row), devbox: row.id === null ? undefined : fromRow(row) };
  }

  async getById(id: string): Promise<Devbox | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM devboxes WHERE id = ?', [id]);
    return rows[0] && fromRow(rows[0]);
  }

  async locate(id: string): Promise<{ node: string; status: DevboxStatus } | undefined> {
    const { rows } = await this.db.query<{ node: string; status: DevboxStatus }>('SELECT node, status FROM devboxes WHERE id = ?', [id]);
    return rows[0];
  }

  async move(id: string, from: string, to: string): Promise<boolean> {
    const r = await this.db.query("UPDATE devboxes SET node = ? WHERE id = ? AND node = ? AND status = 'suspended'", [to, id, from]);
    return r.rowCount > 0;
  }

  list(accountId: string, page: PageQuery, filter: DevboxListFilter = {}): Promise<Page<Devbox>> {
    const where = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (filter.status) {
      where.push('status = ?');
      params.push(filter.status);
    }
    searchFilter(where, params, filter.search);
    return paginate(this.db, 'devboxes', where, params, page, fromRow);
  }

  async countByStatus(): Promise<Partial<Record<DevboxStatus, number>>> {
    const { rows } = await this.db.query<{ status: DevboxStatus; n: number | string }>(
      "SELECT status, COUNT(*) AS n FROM devboxes WHERE account_id <> '' GROUP BY status",
    );
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  async listByStatus(statuses: readonly DevboxStatus[], node?: string): Promise<Devbox[]> {
    // Rows written before nodes were recorded ('') belong to whichever server opens the data dir.
    const byNode = node === undefined ? '' : " AND (node = ? OR node = '')";
    const params = node === undefined ? [...statuses] : [...statuses, node];
    const { rows } = await this.db.query<Row>(`SELECT * FROM devboxes WHERE status IN (${marks(statuses)})${byNode} ORDER BY id`, params);
    return rows.map(fromRow);
  }

  async transition(id: string, t: DevboxTransition): Promise<Devbox | undefined> {
    // The transitions are appended in SQL, so the JSON array is never rewritten from a stale copy.
    const append =
      this.db.dialect === 'postgres'
        ? '(state_transitions::jsonb || ?::jsonb)::text'
        : `json_insert(state_transitions${", '$[#]', json(?)".repeat(t.transitions.length)})`;
    const appendArgs = this.db.dialect === 'postgres' ? [JSON.stringify(t.transitions)] : t.transitions.map((x) => JSON.stringify(x));
    const { rows } = await this.db.query<Row>(
      `UPDATE devboxes SET status = ?, state_transitions = ${append},
         end_time_ms = COALESCE(?, end_time_ms), failure_reason = COALESCE(?, failure_reason),
         shutdown_reason = COALESCE(?, shutdown_reason), layers = COALESCE(?, layers)
       WHERE id = ? AND status IN (${marks(t.from)}) RETURNING *`,
      [t.to, ...appendArgs, t.endTimeMs ?? null, t.failureReason ?? null, t.shutdownReason ?? null, t.layers ? JSON.stringify(t.layers) : null, id, ...t.from],
    );
    return rows[0] && fromRow(rows[0]);
  }

  async patch(accountId: string, id: string, patch: { name?: string | null; metadata?: Record<string, string> }): Promise<Devbox | undefined> {
    const sets: string[] = [];
    const args: unknown[] = [];
    if (patch.name !== undefined) {
      sets.push('name = ?');
      args.push(patch.name);
    }
    if (patch.metadata !== undefined) {
      sets.push('metadata = ?');
      args.push(JSON.stringify(patch.metadata));
    }
    if (!sets.length) return this.get(accountId, id);
    const { rows } = await this.db.query<Row>(`UPDATE devboxes SET ${sets.join(', ')} WHERE account_id = ? AND id = ? RETURNING *`, [...args, accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  async markView(id: string, part: string): Promise<void> {
    // Only ever added: a part recorded stays, so a reader that saw the row without it read before the write.
    await this.db.query('UPDATE devboxes SET view_parts = view_parts || ? WHERE id = ? AND view_parts IS NOT NULL AND view_parts NOT LIKE ?', [
      `${part},`,
      id,
      `%,${part},%`,
    ]);
  }

  async keepAlive(accountId: string, id: string, atMs: number): Promise<boolean> {
    const r = await this.db.query(`UPDATE devboxes SET keep_alive_at_ms = ? WHERE account_id = ? AND id = ? AND status NOT IN ${TERMINAL_SQL}`, [
      atMs,
      accountId,
      id,
    ]);
    return r.rowCount > 0;
  }
}
