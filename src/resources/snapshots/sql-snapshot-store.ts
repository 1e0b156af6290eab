import { whereMetadata } from '../../platform/store/sql/metadata-filter.js';
import { marks, type SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import type { Snapshot, SnapshotFilters, SnapshotStatus } from './types.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { SnapshotStore } from './snapshot-store.js';

interface Row {
  id: string;
  account_id: string;
  source_devbox_id: string;
  source_blueprint_id: string | null;
  name: string | null;
  metadata: string;
  commit_message: string | null;
  status: SnapshotStatus;
  error_message: string | null;
  size_bytes: number | null;
  layers: string;
  create_time_ms: number;
  node: string;
}

const fromRow = (r: Row): Snapshot => ({
  id: r.id,
  accountId: r.account_id,
  sourceDevboxId: r.source_devbox_id,
  sourceBlueprintId: r.source_blueprint_id,
  name: r.name,
  metadata: JSON.parse(r.metadata),
  commitMessage: r.commit_message,
  status: r.status,
  errorMessage: r.error_message,
  sizeBytes: r.size_bytes,
  layers: JSON.parse(r.layers),
  createTimeMs: r.create_time_ms,
  node: r.node,
});

const toRow = (s: Snapshot): Row => ({
  id: s.id,
  account_id: s.accountId,
  source_devbox_id: s.sourceDevboxId,
  source_blueprint_id: s.sourceBlueprintId,
  name: s.name,
  metadata: JSON.stringify(s.metadata),
  commit_message: s.commitMessage,
  status: s.status,
  error_message: s.errorMessage,
  size_bytes: s.sizeBytes,
  layers: JSON.stringify(s.layers),
  create_time_ms: s.createTimeMs,
  node: s.node,
});

const COLUMNS = Object.keys(toRow({} as Snapshot));
const INSERT = `INSERT INTO snapshots (${COLUMNS.join(', ')}) VALUES (${marks(COLUMNS)})`;

export class SqlSnapshotStore implements SnapshotStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(s: Snapshot): Promise<void> {
    const row = toRow(s) as unknown as Record<string, unknown>;
    await this.db.query(
      INSERT,
      COLUMNS.map((c) => row[c]),
    );
  }

  async get(accountId: string, id: string): Promise<Snapshot | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM snapshots WHERE account_id = ? AND id = ?', [accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  async getById(id: string): Promise<Snapshot | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM snapshots WHERE id = ?', [id]);
    return rows[0] && fromRow(rows[0]);
  }

  list(accountId: string, page: PageQuery, f: SnapshotFilters): Promise<Page<Snapshot>> {
    const where = ['account_id = ?', "status != 'deleted'"];
    const params: unknown[] = [accountId];
    if (f.devboxId) {
      where.push('source_devbox_id = ?');
      params.push(f.devboxId);
    }
    if (f.sourceBlueprintId) {
      where.push('source_blueprint_id = ?');
      params.push(f.sourceBlueprintId);
    }
    whereMetadata(this.db, 'snapshots', f, where, params);
    return paginate(this.db, 'snapshots', where, params, page, fromRow);
  }

  async listByStatus(statuses: readonly SnapshotStatus[], node?: string): Promise<Snapshot[]> {
    const byNode = node === undefined ? '' : " AND (node = ? OR node = '')";
    const params = node === undefined ? [...statuses] : [...statuses, node];
    const { rows } = await this.db.query<Row>(`SELECT * FROM snapshots WHERE status IN (${marks(statuses)})${byNode} ORDER BY id`, params);
    return rows.map(fromRow);
  }

  async inProgressFor(devboxId: string): Promise<Snapshot | undefined> {
    const { rows } = await this.db.query<Row>("SELECT * FROM snapshots WHERE source_devbox_id = ? AND status = 'in_progress' LIMIT 1", [devboxId]);
    return rows[0] && fromRow(rows[0]);
  }

  async setStatus(
    id: string,
    from: readonly SnapshotStatus[],
    to: SnapshotStatus,
    fields: { sizeBytes?: number; errorMessage?: string } = {},
  ): Promise<Snapshot | undefined> {
    const { rows } = await this.db.query<Row>(
      `UPDATE snapshots SET status = ?, size_bytes = COALESCE(?, size_bytes), error_message = COALESCE(?, error_message)
       WHERE id = ? AND status IN (${marks(from)}) RETURNING *`,
      [to, fields.sizeBytes ?? null, fields.errorMessage ?? null, id, ...from],
    );
    return rows[0] && fromRow(rows[0]);
  }

  async patch(
    accountId: string,
    id: string,
    patch: { name?: string | null; metadata?: Record<string, string>; commitMessage?: string | null },
  ): Promise<Snapshot | undefined> {
    const columns: [string, unknown][] = [];
    if (patch.name !== undefined) columns.push(['name', patch.name]);
    if (patch.metadata !== undefined) columns.push(['metadata', JSON.stringify(patch.metadata)]);
    if (patch.commitMessage !== undefined) columns.push(['commit_message', patch.commitMessage]);
    if (!columns.length) return this.get(accountId, id);
    const sets = columns.map(([c]) => `${c} = ?`);
    const args = columns.map(([, v]) => v);
    const { rows } = await this.db.query<Row>(`UPDATE snapshots SET ${sets.join(', ')} WHERE account_id = ? AND id = ? RETURNING *`, [...args, accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }
}
