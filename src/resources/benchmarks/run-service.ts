import { DomainError, ERRORS } from '../../platform/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { Pumps } from '../../lib/pumps.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Page, PageQuery, Store } from '../../platform/store/types.js';
import { RUN_TERMINAL, type ScenarioRun } from '../scenarios/index.js';
import type { BenchmarkService } from './benchmark-service.js';
import type { ScenarioRunsPort, ScenariosPort } from './ports.js';
import { RunLeases } from './run-lease.js';
import { SqlBenchmarkRunStore } from './sql-run-store.js';
import type { BenchmarkRun, BenchmarkRunListFilter, RunProfile } from './types.js';

/** The durable job that starts a benchmark run's first scenario runs (and resumes it after a restart). */
export const RUN_JOB = 'benchmark.run';
/** Scenario runs a benchmark run's `complete` scores and completes at once. */
const COMPLETE_CONCURRENCY = 8;
/** Wait before a pump that failed for a passing reason (a 5xx, a 429) tries again. */
const RETRY_MS = 2000;

export interface StartBenchmarkRunInput {
  benchmarkId: string;
  runName: string | null;
  metadata: Record<string, string>;
  profile: RunProfile;
}

/**
 * Benchmark runs: one scenario run per scenario of the benchmark, at most `concurrency` of them open (not
 * ended) at once; the next ones start as earlier ones end. The run completes by itself once every scenario
 * ran and every scenario run ended (or by `complete`), with score = Σ scenario scores / number of scenario
 * runs (an unscored run counts 0). Everything is read back from the database: the scenario runs carry the
 * benchmark run's id, so a restart resumes a run with no in-process state (the start job, then `reconcile`).
 */
export class BenchmarkRunService {
  readonly runs: SqlBenchmarkRunStore;
  private readonly leases: RunLeases;
  /** One pump per run in this process: a failed pass runs again after RETRY_MS. */
  private readonly pumps: Pumps;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly benchmarks: BenchmarkService,
    private readonly scenarios: () => ScenariosPort,
    private readonly scenarioRuns: () => ScenarioRunsPort,
    private readonly jobs: () => JobRunner,
    private readonly opts: { node: string; concurrency: number; accountMaxRunning: number; leaseMs: number },
    private readonly log: Logger,
  ) {
    this.runs = new SqlBenchmarkRunStore(store.db);
    this.leases = new RunLeases(this.runs, opts.node, opts.leaseMs, (id) => void this.wake(id), log);
    this.pumps = new Pumps(
      (id) => this.pass(id),
      (id, err) => {
        this.log.warn({ err, benchmarkRun: id }, 'benchmark run pass failed; it runs again');
        setTimeout(() => void this.wake(id), RETRY_MS).unref();
      },
      () => this.stopped,
    );
  }

  /**
   * 400 before anything starts when the benchmark or any of its scenarios needs an environment variable or
   * secret the profile does not give (or a named secret does not exist). Answers the run `running`; its
   * scenario runs start in the background (listScenarioRuns shows them).
   */
  async start(accountId: string, input: StartBenchmarkRunInput): Promise<BenchmarkRun> {
    const b = await this.benchmarks.get(accountId, input.benchmarkId);
    if (b.status !== 'active') throw ERRORS.badState(`benchmark ${b.id} is ${b.status}; it cannot be run`);
    if (b.scenarioIds.length === 0) throw ERRORS.invalid(`benchmark ${b.id} has no scenarios to run`);
    await this.refuseOverLimit(this.runs, accountId);
    const p = input.profile;
    // As for a scenario's: a required variable may come from a secret too.
    const missingEnv = b.requiredEnvironmentVariables.filter((n) => !Object.hasOwn(p.envVars, n) && !Object.hasOwn(p.secrets, n));
    if (missingEnv.length) throw ERRORS.invalid(`runProfile.envVars: benchmark ${b.id} requires ${missingEnv.join(', ')}`);
    const missingSecrets = b.requiredSecretNames.filter((n) => !Object.hasOwn(p.secrets, n));
    if (missingSecrets.length) throw ERRORS.invalid(`runProfile.secrets: benchmark ${b.id} requires ${missingSecrets.join(', ')}`);
    for (const id of b.scenarioIds) {
      const scenario = await this.scenarios().get(accountId, id);
      if (scenario.status !== 'active') throw ERRORS.badState(`scenario ${id} of benchmark ${b.id} is ${scenario.status}; it cannot be run`);
      await this.scenarioRuns().checkRequirements(accountId, scenario, { envVars: p.envVars, secrets: p.secrets });
    }
    const run: BenchmarkRun = {
      id: newId('bmr'),
      accountId,
      benchmarkId: b.id,
      node: this.opts.node,
      name: input.runName,
      state: 'running',
      metadata: input.metadata,
      profile: p,
      scenarioIds: b.scenarioIds,
      score: null,
      startTimeMs: Date.now(),
      endTimeMs: null,
      failureReason: null,
      jobId: null,
    };
    const job = await this.store.transaction(async (tx) => {
      // Counted again with the insert, under a lock on the account's runs: READ COMMITTED alone lets two starts
      // (two servers) both count below the limit. SQLite runs one transaction at a time already.
      if (tx.db.dialect === 'postgres') await tx.db.query('SELECT pg_advisory_xact_lock(hashtext(?))', [`benchmark_runs:${accountId}`]);
      const runs = new SqlBenchmarkRunStore(tx.db);
      await this.refuseOverLimit(runs, accountId);
      await runs.insert(run, this.leases.until());
      return this.jobs().add(RUN_JOB, run.id, tx.jobs);
    });
    this.jobs().start(job);
    this.log.info({ benchmarkRun: run.id, benchmark: b.id, scenarios: b.scenarioIds.length }, 'benchmark run started');
    return run;
  }

  /** DEVBOXD_BENCHMARK_ACCOUNT_MAX_RUNNING: an account's running runs bound the boxes its benchmarks hold. */
  private async refuseOverLimit(runs: SqlBenchmarkRunStore, accountId: string): Promise<void> {
    const running = await runs.countRunning(accountId);
    if (running >= this.opts.accountMaxRunning) {
      throw ERRORS.conflict(
        `the account has ${running} benchmark runs running, its limit (DEVBOXD_BENCHMARK_ACCOUNT_MAX_RUNNING): complete or cancel one first`,
      );
    }
  }

  async get(accountId: string, id: string): Promise<BenchmarkRun> {
    const r = await this.runs.get(accountId, id);
    if (!r) throw ERRORS.notFound('benchmark run', id);
    return r;
  }

  list(accountId: string, filter: BenchmarkRunListFilter, page: PageQuery): Promise<Page<BenchmarkRun>> {
    return this.runs.list(accountId, filter, page);
  }

  /**
   * Ends the run `canceled` (no scenario run starts after), cancels its open scenario runs (their devboxes
   * shut down), and scores it over the scenario runs that had completed: Σ their scores / their number
   * (null when none had). A run already ended is returned as it is.
   */
  async cancel(accountId: string, id: string): Promise<BenchmarkRun> {
    const run = await this.get(accountId, id);
    if (run.state === 'completed') return run;
    const ended = run.state === 'running' && (await this.runs.end(id, 'canceled', null, Date.now(), null));
    // A pass starting scenario runs now finishes first (none escapes the cancel); its error is the job's, not ours.
    await this.pumps.settled(id);
    // Always, even when the run had already ended: a cancel that failed half-way is finished by the next one.
    const open = (await this.scenarioRunsOf(run)).filter((r) => !RUN_TERMINAL.has(r.state));
    const errors = await eachBounded(open, COMPLETE_CONCURRENCY, (r) => this.scenarioRuns().cancel(accountId, r.id));
    if (ended) {
      const completed = (await this.scenarioRunsOf(run)).filter((r) => r.state === 'completed');
      await this.runs.setScore(id, completed.length ? sum(completed) / completed.length : null);
    }
    if (errors[0]) throw errors[0];
    this.log.info({ benchmarkRun: id, canceled: open.length }, 'benchmark run canceled');
    return this.get(accountId, id);
  }

  /**
   * Scores and completes every open scenario run, then the run. A run with scenarios not started yet (more
   * than the concurrency allows at once) is refused: completing it would score it over part of the benchmark.
   */
  async complete(accountId: string, id: string): Promise<BenchmarkRun> {
    const run = await this.get(accountId, id);
    if (run.state !== 'running') return run;
    if (run.jobId) {
      throw ERRORS.badState(`benchmark run ${id} is driven by benchmark job ${run.jobId}: it completes once its trials end (cancel it to stop them)`);
    }
    const started = await this.scenarioRunsOf(run);
    const waiting = run.scenarioIds.length - new Set(started.map((r) => r.scenarioId)).size;
    if (waiting > 0) {
      throw ERRORS.badState(
        `benchmark run ${id} has ${waiting} of ${run.scenarioIds.length} scenarios not started yet (at most ${this.opts.concurrency} run at once): ` +
          'complete or cancel its open scenario runs first, or cancel the benchmark run',
      );
    }
    const open = started.filter((r) => !RUN_TERMINAL.has(r.state));
    const errors = await eachBounded(open, COMPLETE_CONCURRENCY, (r) => this.scenarioRuns().complete(accountId, r.id));
    await this.wake(id);
    const after = await this.get(accountId, id);
    if (after.state === 'running' && errors[0]) throw errors[0];
    return after;
  }

  /** The listener of scenario runs: an ended one frees a slot of its benchmark run, or ends the run. */
  runChanged(r: ScenarioRun): void {
    if (r.benchmarkRunId && RUN_TERMINAL.has(r.state)) void this.wake(r.benchmarkRunId);
  }

  /** The start job's handler: the first pass (and, after a restart, the one that resumes the run). */
  async runJob(runId: string): Promise<void> {
    const failure = await this.wake(runId, true);
    if (failure) throw failure;
  }

  /** The start job failed its last attempt: the run cannot go on. */
  async jobExhausted(runId: string, error: string): Promise<void> {
    const run = await this.runs.getById(runId);
    if (run?.state === 'running') await this.fail(run, `its scenario runs could not start: ${error}`);
  }

  /**
   * At start, after the jobs resumed: a pass over every running run of this node (ends missed while down);
   * then the leases: runs of servers gone for longer than the lease are taken over (now and as they lapse).
   */
  async reconcile(): Promise<void> {
    for (const id of await this.runs.openOn(this.opts.node)) void this.wake(id);
    await this.leases.start();
  }

  stop(): void {
    this.stopped = true;
    this.leases.stop();
  }

  /** Passes over the run until none is asked for (see Pumps); `rethrow` lets the start job retry a failed pass. */
  private wake(runId: string, rethrow = false): Promise<unknown> {
    return this.pumps.wake(runId, rethrow);
  }

  /**
   * One pass under the run's row lock on PostgreSQL: two servers may both be woken for one run (the scenario
   * run ended on the other one); the lock makes their passes take turns, so each sees the other's starts and
   * none starts a scenario twice (the unique index on scenario_runs refuses it all the same). SQLite is one
   * process, whose pumps map already keeps one pump per run.
   */
  private async pass(runId: string): Promise<void> {
    if (this.store.dialect !== 'postgres') return this.passLocked(runId, this.runs);
    await this.store.transaction(async (tx) => {
      await tx.db.query('SELECT id FROM benchmark_runs WHERE id = ? FOR UPDATE', [runId]);
      // The run's row is written through the transaction that holds its lock (another connection would wait on it).
      await this.passLocked(runId, new SqlBenchmarkRunStore(tx.db));
    });
  }

  /** End the run if everything ran, else start scenario runs into the free slots. */
  private async passLocked(runId: string, runs: SqlBenchmarkRunStore): Promise<void> {
    const run = await runs.getById(runId);
    // A benchmark job's run: its trials start the scenario runs and the job ends it.
    if (!run || run.state !== 'running' || run.jobId) return;
    const started = await this.scenarioRunsOf(run);
    const seen = new Set(started.map((r) => r.scenarioId));
    const open = started.filter((r) => !RUN_TERMINAL.has(r.state)).length;
    const pending = run.scenarioIds.filter((s) => !seen.has(s));
    if (pending.length === 0 && open === 0) {
      if (await runs.end(run.id, 'completed', sum(started) / started.length, Date.now(), null)) {
        this.log.info({ benchmarkRun: run.id, runs: started.length }, 'benchmark run completed');
      }
      return;
    }
    const batch = pending.slice(0, Math.max(0, this.opts.concurrency - open));
    const p = run.profile;
    const results = await Promise.allSettled(
      batch.map((scenarioId) =>
        this.scenarioRuns().start(run.accountId, {
          scenarioId,
          benchmarkRunId: run.id,
          runName: run.name,
          metadata: run.metadata,
          purpose: p.purpose,
          envVars: p.envVars,
          secrets: p.secrets,
          launchParameters: p.launchParameters,
          mounts: p.mounts,
          otherMounts: p.otherMounts,
        }),
      ),
    );
    const refused = results.findIndex((r) => r.status === 'rejected' && isRefusal(r.reason));
    if (refused >= 0) {
      const why = ((results[refused] as PromiseRejectedResult).reason as Error).message;
      await this.fail(run, `scenario ${batch[refused]} could not start: ${why}`, runs);
      return;
    }
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && !isWaiting(r.reason));
    if (failed) throw failed.reason;
    if (results.some((r) => r.status === 'rejected')) {
      // A quota (the account's devboxes, a limit reached): the run waits for a slot, it does not fail. Not a
      // job retry: those are few and end in failing the run. Another pass comes as runs end, or after the wait.
      setTimeout(() => void this.wake(run.id), RETRY_MS).unref();
    }
  }

  /** A scenario run the server refused to start (not a passing failure): the run fails, its open runs cancel. */
  private async fail(run: BenchmarkRun, reason: string, runs = this.runs): Promise<void> {
    if (!(await runs.end(run.id, 'failed', null, Date.now(), reason))) return;
    this.log.warn({ benchmarkRun: run.id, reason }, 'benchmark run failed');
    const open = (await this.scenarioRunsOf(run)).filter((r) => !RUN_TERMINAL.has(r.state));
    await eachBounded(open, COMPLETE_CONCURRENCY, (r) => this.scenarioRuns().cancel(run.accountId, r.id));
    const completed = (await this.scenarioRunsOf(run)).filter((r) => r.state === 'completed');
    await runs.setScore(run.id, completed.length ? sum(completed) / completed.length : null);
  }

  /** Every scenario run of the run (at most one per scenario, so at most MAX_SCENARIOS). */
  private async scenarioRunsOf(run: BenchmarkRun): Promise<ScenarioRun[]> {
    const out: ScenarioRun[] = [];
    let startingAfter: string | undefined;
    for (;;) {
      const page = await this.scenarioRuns().list(run.accountId, { benchmarkRunId: run.id }, { limit: 5000, startingAfter, includeTotalCount: false });
      out.push(...page.items);
      if (!page.hasMore || page.items.length === 0) return out;
      startingAfter = page.items[page.items.length - 1]!.id;
    }
  }
}

const sum = (runs: ScenarioRun[]) => runs.reduce((s, r) => s + (r.scoringResult?.score ?? 0), 0);

/** A 4xx other than 429 and 409: starting again would be refused again. */
const isRefusal = (err: unknown) => err instanceof DomainError && err.status >= 400 && err.status < 500 && err.status !== 429 && !isWaiting(err);
/** A 409 (a quota or a state that changes as other runs end): starting again later may pass. */
const isWaiting = (err: unknown) => err instanceof DomainError && err.status === 409;

/** Runs `fn` over `items`, `limit` at a time; resolves with the errors (after every item ran). */
async function eachBounded<T>(items: T[], limit: number, fn: (t: T) => Promise<unknown>): Promise<Error[]> {
  const errors: Error[] = [];
  const queue = [...items];
  const worker = async () => {
    for (let t = queue.shift(); t !== undefined; t = queue.shift()) await fn(t).catch((e: Error) => errors.push(e));
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return errors;
}
