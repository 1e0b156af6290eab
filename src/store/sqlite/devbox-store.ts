import type { Db } from './db.js';
import { paginate } from './paginate.js';
import type { Devbox, DevboxStatus } from '../../domain/devboxes/types.js';
import type { DevboxStore, Page, PageQuery } from '../types.js';

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
});

const COLUMNS = Object.keys(toRow({} as Devbox));

export class SqliteDevboxStore implements DevboxStore {
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly getStmt;
  private readonly getByIdStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO devboxes (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
    );
    const sets = COLUMNS.filter((c) => c !== 'id' && c !== 'account_id').map((c) => `${c} = @${c}`);
    this.updateStmt = db.prepare(`UPDATE devboxes SET ${sets.join(', ')} WHERE id = @id`);
    this.getStmt = db.prepare('SELECT * FROM devboxes WHERE account_id = ? AND id = ?');
    this.getByIdStmt = db.prepare('SELECT * FROM devboxes WHERE id = ?');
  }

  insert(d: Devbox): void {
    this.insertStmt.run(toRow(d));
  }

  update(d: Devbox): void {
    this.updateStmt.run(toRow(d));
  }

  get(accountId: string, id: string): Devbox | undefined {
    const r = this.getStmt.get(accountId, id) as Row | undefined;
    return r && fromRow(r);
  }

  getById(id: string): Devbox | undefined {
    const r = this.getByIdStmt.get(id) as Row | undefined;
    return r && fromRow(r);
  }

  list(accountId: string, page: PageQuery, status?: DevboxStatus): Page<Devbox> {
    const where = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (status) {
      where.push('status = ?');
      params.push(status);
    }
    return paginate(this.db, 'devboxes', where, params, page, fromRow);
  }

  listByStatus(statuses: DevboxStatus[]): Devbox[] {
    const marks = statuses.map(() => '?').join(', ');
    return (this.db.prepare(`SELECT * FROM devboxes WHERE status IN (${marks}) ORDER BY id`).all(...statuses) as Row[]).map(
      fromRow,
    );
  }
}
