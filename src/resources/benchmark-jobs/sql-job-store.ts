import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { searchFilter } from '../../platform/store/sql/name-filter.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { BenchmarkJob, BenchmarkJobListFilter, BenchmarkJobState, FailureType, Trial, TrialState } from './types.js';

interface JobRow {
  id: string;
  account_id: string;
  name: string;
  state: BenchmarkJobState;
  node: string;
  spec: string;
  failure_reason: string | null;
  create_time_ms: number;
  end_time_ms: number | null;
}

/** What the `spec` column holds: the job's resolved parts that never change after create. */
type Spec = Pick<BenchmarkJob, 'source' | 'scenarios' | 'agents' | 'orchestrator' | 'runIds'>;

const fromJobRow = (r: JobRow): BenchmarkJob => {
  const spec = JSON.parse(r.spec) as Spec;
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    state: r.state,
    node: r.node,
    ...spec,
    failureReason: r.failure_reason,
    createTimeMs: Number(r.create_time_ms),
    endTimeMs: r.end_time_ms === null ? null : Number(r.end_time_ms),
  };
};

interface TrialRow {
  id: string;
  job_id: string;
  agent_index: number;
  scenario_id: string;
  attempt: number;
  state: TrialState;
  scenario_run_id: string | null;
  devbox_id: string | null;
  execution_id: string | null;
  agent_start_ms: number | null;
  score: number | null;
  failure_type: FailureType | null;
  failure_message: string | null;
  start_time_ms: number;
  end_time_ms: number | null;
}

const numOrNull = (v: number | null) => (v === null ? null : Number(v));

const fromTrialRow = (r: TrialRow): Trial => ({
  id: r.id,
  jobId: r.job_id,
  agentIndex: Number(r.agent_index),
  scenarioId: r.scenario_id,
  attempt: Number(r.attempt),
  state: r.state,
  scenarioRunId: r.scenario_run_id,
  devboxId: r.devbox_id,
  executionId: r.execution_id,
  agentStartMs: numOrNull(r.agent_start_ms),
  score: numOrNull(r.score),
  failureType: r.failure_type,
  failureMessage: r.failure_message,
  startTimeMs: Number(r.start_time_ms),
  endTimeMs: numOrNull(r.end_time_ms),
});

/** A trial's step, written as it is taken. */
export type TrialChange = Partial<Pick<Trial, 'scenarioRunId' | 'devboxId' | 'executionId' | 'agentStartMs'>>;

/** The benchmark_jobs and benchmark_job_trials tables over either dialect. */
export class SqlBenchmarkJobStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(j: BenchmarkJob): Promise<void> {
    const spec: Spec = { source: j.source, scenarios: j.scenarios, agents: j.agents, orchestrator: j.orchestrator, runIds: j.runIds };
    await this.db.query(
      'INSERT INTO benchmark_jobs (id, account_id, name, state, node, spec, failure_reason, create_time_ms, end_time_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [j.id, j.accountId, j.name, j.state, j.node, JSON.stringify(spec), j.failureReason, j.createTimeMs, j.endTimeMs],
    );
  }

  async get(accountId: string, id: string): Promise<BenchmarkJob | undefined> {
    const { rows } = await this.db.query<JobRow>('SELECT * FROM benchmark_jobs WHERE account_id = ? AND id = ?', [accountId, id]);
    return rows[0] && fromJobRow(rows[0]);
  }

  async getById(id: string): Promise<BenchmarkJob | undefined> {
    const { rows } = await this.db.query<JobRow>('SELECT * FROM benchmark_jobs WHERE id = ?', [id]);
    return rows[0] && fromJobRow(rows[0]);
  }

  list(accountId: string, filter: BenchmarkJobListFilter, page: PageQuery): Promise<Page<BenchmarkJob>> {
    const where = ['account_id = ?'];
    const params: unknown[] = [accountId];
    if (filter.name) where.push('name = ?'), params.push(filter.name);
    searchFilter(where, params, filter.search);
    return paginate<JobRow, BenchmarkJob>(this.db, 'benchmark_jobs', where, params, page, fromJobRow);
  }

  async countRunning(accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>("SELECT COUNT(*) AS n FROM benchmark_jobs WHERE account_id = ? AND state = 'running'", [accountId]);
    return Number(rows[0]!.n);
  }

  /** Ids of this node's running jobs (resumed at start). */
  async openOn(node: string): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>("SELECT id FROM benchmark_jobs WHERE node = ? AND state = 'running' ORDER BY id", [node]);
    return rows.map((r) => r.id);
  }

  /** running → a final state, once: false when the job had already ended. */
  async end(id: string, state: Exclude<BenchmarkJobState, 'running'>, reason: string | null): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE benchmark_jobs SET state = ?, failure_reason = ?, end_time_ms = ? WHERE id = ? AND state = 'running'", [
      state,
      reason,
      Date.now(),
      id,
    ]);
    return rowCount > 0;
  }

  /** New trials of a pass, in one transaction (one commit, not one per trial: each commit waits for the disk). */
  async insertTrials(trials: Trial[]): Promise<void> {
    if (!trials.length) return;
    await this.db.transaction(async (tx) => {
      for (const t of trials) await new SqlBenchmarkJobStore(tx).insertTrial(t);
    });
  }

  private async insertTrial(t: Trial): Promise<void> {
    await this.db.query(
      `INSERT INTO benchmark_job_trials (id, job_id, agent_index, scenario_id, attempt, state, scenario_run_id, devbox_id, execution_id, agent_start_ms,
         score, failure_type, failure_message, start_time_ms, end_time_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        t.id,
        t.jobId,
        t.agentIndex,
        t.scenarioId,
        t.attempt,
        t.state,
        t.scenarioRunId,
        t.devboxId,
        t.executionId,
        t.agentStartMs,
        t.score,
        t.failureType,
        t.failureMessage,
        t.startTimeMs,
        t.endTimeMs,
      ],
    );
  }

  /** Every trial of the job, by agent config, scenario and attempt. */
  async trialsOf(jobId: string): Promise<Trial[]> {
    const { rows } = await this.db.query<TrialRow>('SELECT * FROM benchmark_job_trials WHERE job_id = ? ORDER BY agent_index, scenario_id, attempt', [jobId]);
    return rows.map(fromTrialRow);
  }

  /** Records a step of a running trial. */
  async step(id: string, change: TrialChange): Promise<void> {
    const cols: Record<keyof TrialChange, string> = {
      scenarioRunId: 'scenario_run_id',
      devboxId: 'devbox_id',
      executionId: 'execution_id',
      agentStartMs: 'agent_start_ms',
    };
    const keys = (Object.keys(change) as (keyof TrialChange)[]).filter((k) => change[k] !== undefined);
    if (!keys.length) return;
    await this.db.query(`UPDATE benchmark_job_trials SET ${keys.map((k) => `${cols[k]} = ?`).join(', ')} WHERE id = ?`, [...keys.map((k) => change[k]), id]);
  }

  /** running → its outcome (with its scenario run, when it had one), once: false when the trial had already ended. */
  async finish(
    id: string,
    state: Exclude<TrialState, 'running'>,
    score: number | null,
    failure: { type: FailureType; message: string } | null,
    scenarioRunId: string | null,
  ): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE benchmark_job_trials SET state = ?, score = ?, failure_type = ?, failure_message = ?, end_time_ms = ?,
         scenario_run_id = COALESCE(?, scenario_run_id) WHERE id = ? AND state = 'running'`,
      [state, score, failure?.type ?? null, failure?.message ?? null, Date.now(), scenarioRunId, id],
    );
    return rowCount > 0;
  }
}
