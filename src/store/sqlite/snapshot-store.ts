import type { Db } from './db.js';
import { paginate } from './paginate.js';
import type { Snapshot, SnapshotFilters, SnapshotStatus } from '../../domain/snapshots/types.js';
import type { Page, PageQuery, SnapshotStore } from '../types.js';

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
});

const COLUMNS = Object.keys(toRow({} as Snapshot));
const MUTABLE = ['name', 'metadata', 'commit_message', 'status', 'error_message', 'size_bytes'];

export class SqliteSnapshotStore implements SnapshotStore {
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly getStmt;
  private readonly getByIdStmt;
  private readonly inProgressStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO snapshots (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`);
    this.updateStmt = db.prepare(`UPDATE snapshots SET ${MUTABLE.map((c) => `${c} = @${c}`).join(', ')} WHERE id = @id`);
    this.getStmt = db.prepare('SELECT * FROM snapshots WHERE account_id = ? AND id = ?');
    this.getByIdStmt = db.prepare('SELECT * FROM snapshots WHERE id = ?');
    this.inProgressStmt = db.prepare("SELECT * FROM snapshots WHERE source_devbox_id = ? AND status = 'in_progress' LIMIT 1");
  }

  insert(s: Snapshot): void {
    this.insertStmt.run(toRow(s));
  }

  update(s: Snapshot): void {
    this.updateStmt.run(toRow(s));
  }

  get(accountId: string, id: string): Snapshot | undefined {
    const r = this.getStmt.get(accountId, id) as Row | undefined;
    return r && fromRow(r);
  }

  getById(id: string): Snapshot | undefined {
    const r = this.getByIdStmt.get(id) as Row | undefined;
    return r && fromRow(r);
  }

  list(accountId: string, page: PageQuery, f: SnapshotFilters): Page<Snapshot> {
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
    // json_each matches keys literally, whatever characters they hold.
    for (const [k, v] of Object.entries(f.metadataEquals ?? {})) {
      where.push('EXISTS (SELECT 1 FROM json_each(snapshots.metadata) m WHERE m.key = ? AND m.value = ?)');
      params.push(k, v);
    }
    for (const [k, values] of Object.entries(f.metadataIn ?? {})) {
      if (values.length === 0) {
        where.push('0');
        continue;
      }
      where.push(`EXISTS (SELECT 1 FROM json_each(snapshots.metadata) m WHERE m.key = ? AND m.value IN (${values.map(() => '?').join(', ')}))`);
      params.push(k, ...values);
    }
    return paginate(this.db, 'snapshots', where, params, page, fromRow);
  }

  listByStatus(statuses: SnapshotStatus[]): Snapshot[] {
    const marks = statuses.map(() => '?').join(', ');
    return (this.db.prepare(`SELECT * FROM snapshots WHERE status IN (${marks}) ORDER BY id`).all(...statuses) as Row[]).map(fromRow);
  }

  inProgressFor(devboxId: string): Snapshot | undefined {
    const r = this.inProgressStmt.get(devboxId) as Row | undefined;
    return r && fromRow(r);
  }
}
