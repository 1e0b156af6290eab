import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import { nameFilters } from '../../platform/store/sql/name-filter.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { BenchmarkRun, BenchmarkRunListFilter, BenchmarkRunState, RunProfile } from './types.js';

interface Row {
  id: string;
  account_id: string;
  benchmark_id: string | null;
  node: string;
  name: string | null;
  state: BenchmarkRunState;
  metadata: string;
  profile: string;
  scenario_ids: string;
  score: number | null;
  start_time_ms: number;
  end_time_ms: number | null;
  failure_reason: string | null;
  job_id: string | null;
}

const fromRow = (r: Row): BenchmarkRun => ({
  id: r.id,
  accountId: r.account_id,
  benchmarkId: r.benchmark_id,
  node: r.node,
  name: r.name,
  state: r.state,
  metadata: JSON.parse(r.metadata) as Record<string, string>,
  profile: JSON.parse(r.profile) as RunProfile,
  scenarioIds: JSON.parse(r.scenario_ids) as string[],
  score: r.score === null ? null : Number(r.score),
  startTimeMs: Number(r.start_time_ms),
  endTimeMs: r.end_time_ms === null ? null : Number(r.end_time_ms),
  failureReason: r.failure_reason,
  jobId: r.job_id,
});

/** The benchmark_runs table over either dialect. */
export class SqlBenchmarkRunStore {
  constructor(private readonly db: SqlExecutor) {}

  /** A new run, leased to its node until `leaseUntilMs`. */
  async insert(r: BenchmarkRun, leaseUntilMs: number): Promise<void> {
    await this.db.query(
      `INSERT INTO benchmark_runs (id, account_id, benchmark_id, node, name, state, metadata, profile, scenario_ids, score, start_time_ms,
         end_time_ms, failure_reason, lease_until_ms, job_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        r.id,
        r.accountId,
        r.benchmarkId,
        r.node,
        r.name,
        r.state,
        JSON.stringify(r.metadata),
        JSON.stringify(r.profile),
        JSON.stringify(r.scenarioIds),
        r.score,
        r.startTimeMs,
        r.endTimeMs,
        r.failureReason,
        leaseUntilMs,
        r.jobId,
      ],
    );
  }

  /** Extends the lease of every running run of `node`. */
  async renew(node: string, leaseUntilMs: number): Promise<void> {
    await this.db.query("UPDATE benchmark_runs SET lease_until_ms = ? WHERE node = ? AND state = 'running'", [leaseUntilMs, node]);
  }

  /** Ids of running runs whose lease lapsed before `nowMs` (at most `limit`, the longest lapsed first). */
  async lapsed(nowMs: number, limit: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      "SELECT id FROM benchmark_runs WHERE state = 'running' AND lease_until_ms < ? ORDER BY lease_until_ms, id LIMIT ?",
      [nowMs, limit],
    );
    return rows.map((r) => r.id);
  }

  /** Makes a lapsed run `node`'s, once: false when it ended or another server claimed it first. */
  async claim(id: string, node: string, nowMs: number, leaseUntilMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE benchmark_runs SET node = ?, lease_until_ms = ? WHERE id = ? AND state = 'running' AND lease_until_ms < ?",
      [node, leaseUntilMs, id, nowMs],
    );
    return rowCount > 0;
  }

  async get(accountId: string, id: string): Promise<BenchmarkRun | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM benchmark_runs WHERE account_id = ? AND id = ?', [accountId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  async getById(id: string): Promise<BenchmarkRun | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM benchmark_runs WHERE id = ?', [id]);
    return rows[0] && fromRow(rows[0]);
  }

  list(accountId: string, filter: BenchmarkRunListFilter, page: PageQuery): Promise<Page<BenchmarkRun>> {
    const where = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (filter.benchmarkId) {
      where.push('benchmark_id = ?');
      params.push(filter.benchmarkId);
    }
    if (filter.state) {
      where.push('state = ?');
      params.push(filter.state);
    }
    nameFilters(where, params, filter);
    return paginate<Row, BenchmarkRun>(this.db, 'benchmark_runs', where, params, page, fromRow);
  }

  /** start_run's running runs (a benchmark job's runs are bounded by the job's own limits). */
  async countRunning(accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      "SELECT COUNT(*) AS n FROM benchmark_runs WHERE account_id = ? AND state = 'running' AND job_id IS NULL",
      [accountId],
    );
    return Number(rows[0]!.n);
  }

  /** Ids of this node's running runs (resumed at start). */
  async openOn(node: string): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>("SELECT id FROM benchmark_runs WHERE node = ? AND state = 'running' ORDER BY id", [node]);
    return rows.map((r) => r.id);
  }

  /** running → a final state, once: false if the run had already ended (the other end wins). */
  async end(id: string, state: Exclude<BenchmarkRunState, 'running'>, score: number | null, endTimeMs: number, reason: string | null): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE benchmark_runs SET state = ?, score = ?, end_time_ms = ?, failure_reason = ? WHERE id = ? AND state = 'running'",
      [state, score, endTimeMs, reason, id],
    );
    return rowCount > 0;
  }

  /** The score of a run that ended canceled or failed, reckoned after its open scenario runs were canceled. */
  async setScore(id: string, score: number | null): Promise<void> {
    await this.db.query('UPDATE benchmark_runs SET score = ? WHERE id = ?', [score, id]);
  }
}
