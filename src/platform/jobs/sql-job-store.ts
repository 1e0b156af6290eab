import { marks, type SqlExecutor } from '../store/sql/executor.js';
import type { Job, JobState } from './types.js';
import type { JobStore } from '../store/types.js';

interface Row {
  id: string;
  kind: string;
  subject_id: string;
  state: JobState;
  attempts: number;
  last_error: string | null;
  run_after_ms: number;
  node: string;
  create_time_ms: number;
  update_time_ms: number;
}

const fromRow = (r: Row): Job => ({
  id: r.id,
  kind: r.kind,
  subjectId: r.subject_id,
  state: r.state,
  attempts: r.attempts,
  lastError: r.last_error,
  runAfterMs: r.run_after_ms,
  node: r.node,
  createTimeMs: r.create_time_ms,
  updateTimeMs: r.update_time_ms,
});

const COLUMNS = ['id', 'kind', 'subject_id', 'state', 'attempts', 'last_error', 'run_after_ms', 'node', 'create_time_ms', 'update_time_ms'];
const INSERT = `INSERT INTO jobs (${COLUMNS.join(', ')}) VALUES (${marks(COLUMNS)})`;
/** This node's jobs; rows from before node names ('') belong to whichever server opens the database. */
const OF_NODE = "(node = ? OR node = '')";

/** Every state change is conditional on the state it leaves, so two servers never both run one job. */
export class SqlJobStore implements JobStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(j: Job): Promise<void> {
    await this.db.query(INSERT, [j.id, j.kind, j.subjectId, j.state, j.attempts, j.lastError, j.runAfterMs, j.node, j.createTimeMs, j.updateTimeMs]);
  }

  async get(id: string): Promise<Job | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM jobs WHERE id = ?', [id]);
    return rows[0] && fromRow(rows[0]);
  }

  /** Only this node's jobs (or ones from before node names): another node's sandboxes and layers are not here. */
  async claim(id: string, node: string, nowMs: number): Promise<Job | undefined> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET state = 'running', attempts = attempts + 1, node = ?, update_time_ms = ? WHERE id = ? AND state = 'pending' AND ${OF_NODE}`,
      [node, nowMs, id, node],
    );
    return rowCount ? this.get(id) : undefined;
  }

  async settle(id: string, state: 'succeeded' | 'failed', lastError: string | null, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(`UPDATE jobs SET state = ?, last_error = ?, update_time_ms = ? WHERE id = ? AND state = 'running'`, [
      state,
      lastError,
      nowMs,
      id,
    ]);
    return rowCount > 0;
  }

  async retry(id: string, runAfterMs: number, lastError: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET state = 'pending', run_after_ms = ?, last_error = ?, update_time_ms = ? WHERE id = ? AND state = 'running'`,
      [runAfterMs, lastError, nowMs, id],
    );
    return rowCount > 0;
  }

  async requeueRunning(node: string, nowMs: number): Promise<number> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET state = 'pending', last_error = 'the server restarted while the job ran', update_time_ms = ? WHERE state = 'running' AND ${OF_NODE}`,
      [nowMs, node],
    );
    return rowCount;
  }

  async listOpen(node: string): Promise<Job[]> {
    const { rows } = await this.db.query<Row>(`SELECT * FROM jobs WHERE state IN ('pending', 'running') AND ${OF_NODE} ORDER BY create_time_ms, id`, [node]);
    return rows.map(fromRow);
  }

  async move(id: string, from: string, to: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET node = ?, state = 'pending', update_time_ms = ? WHERE id = ? AND node = ? AND state IN ('pending', 'running')`,
      [to, nowMs, id, from],
    );
    return rowCount > 0;
  }

  async abandon(id: string, from: string, lastError: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE jobs SET state = 'failed', last_error = ?, update_time_ms = ? WHERE id = ? AND node = ? AND state IN ('pending', 'running')`,
      [lastError, nowMs, id, from],
    );
    return rowCount > 0;
  }

  async delete(id: string): Promise<void> {
    await this.db.query('DELETE FROM jobs WHERE id = ?', [id]);
  }
}
