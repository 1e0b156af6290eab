import type { Logger } from '../../lib/logger.js';
import type { JobKind, JobRunner } from '../../platform/jobs/job-runner.js';
import type { Job } from '../../platform/jobs/types.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { DevboxService } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import type { BoxJobs } from '../executions/index.js';
import { SCORE_JOB, type ScenarioRunService } from './run-service.js';
import type { ScorerService } from './scorer-service.js';
import { scoreRun } from './scoring.js';
import type { SqlScenarioStore } from './sql-scenario-store.js';
import { RUN_TERMINAL } from './types.js';

/** How long scoring waits for a run's devbox still booting to come up. */
const BOOT_WAIT_MS = 10 * 60_000;
/** Devbox shutdown reasons that end an open run `timeout` (the rest end it `failed`). */
const TIMEOUT_REASONS = new Set(['keep_alive_timeout', 'idle', 'ttl_expired']);

export interface RunProgressDeps {
  service: ScenarioRunService;
  scenarios: SqlScenarioStore;
  scorers: ScorerService;
  devboxes: () => DevboxService;
  devboxById(id: string): Promise<Devbox | undefined>;
  sandboxOf(id: string): Sandbox | undefined;
  boxJobs: BoxJobs;
  /** Resumes a suspended devbox (the suspend service): scoring needs the box up. */
  resume(accountId: string, id: string): Promise<unknown>;
  /** Ids of the devboxes not ended (start-up reconcile: a run's box that outlived its run goes). */
  liveDevboxIds(): Promise<string[]>;
  jobs: () => JobRunner;
  /** This node's open durable jobs (start-up reconcile: its cut scoring jobs all start at once). */
  openJobs(): Promise<Job[]>;
  log: Logger;
}

/**
 * What moves runs on without a request: the scoring job, the end of a run's devbox (→ timeout or failed), and
 * the start-up reconcile. Scoring jobs resumed at start wait until the devboxes were adopted (`markReady`).
 */
export class RunProgress {
  private readyNow!: () => void;
  private readonly ready = new Promise<void>((resolve) => (this.readyNow = resolve));

  constructor(private readonly deps: RunProgressDeps) {}

  /** The durable job kind: registered with the job runner (as a background kind: it waits for `markReady`). */
  get job(): JobKind {
    return { run: (job) => this.score(job), exhausted: (job, err) => this.scoringFailed(job.subjectId, `scoring failed: ${err}`) };
  }

  /**
   * At start, once the devboxes are adopted, what a crash may have cut short: open runs whose box ended
   * while the server was down end too; a run ended (its state committed) before its box went loses its box;
   * a run scored with `complete` asked completes.
   */
  async reconcile(): Promise<void> {
    const { service } = this.deps;
    for (const r of await service.runs.listOpen()) {
      if (r.state === 'scoring') continue;
      if (await this.boxEnded(r.devboxId)) continue;
      if (r.state === 'scored' && r.completeRequested) await service.finishComplete(r);
    }
    for (const id of await this.deps.liveDevboxIds()) {
      const r = await service.runs.onDevbox(id);
      if (r && RUN_TERMINAL.has(r.state)) await service.shutdownBox(r);
    }
    this.readyNow();
    // The job runner resumes a background kind a few jobs at a time; a scoring job holds its worker up to the
    // boot wait plus its scenario's scorer_timeout_sec (a day at most), so one tenant's long scorers would
    // hold back everyone's scoring after a restart. Each works in its own run's box, bounded by its own
    // timeout, as they did before the restart: all start now (a job a worker claimed first is skipped).
    const now = Date.now();
    for (const job of await this.deps.openJobs()) {
      if (job.kind === SCORE_JOB && job.state === 'pending' && job.runAfterMs <= now) this.deps.jobs().start(job);
    }
  }

  /** The devbox lifecycle's stop listener. */
  onStopped = (devboxId: string, ended: boolean): void => {
    if (ended) void this.boxEnded(devboxId).catch((err) => this.deps.log.error({ err, devbox: devboxId }, 'ending the run of an ended devbox failed'));
  };

  /**
   * A run still open on a box that ended: `timeout` for the box's timers, `failed` otherwise; whether it ended
   * the run. A scoring run is the scoring job's (`scoring` true when the job asks).
   */
  private async boxEnded(devboxId: string, scoring = false): Promise<boolean> {
    const r = await this.deps.service.runs.openOnDevbox(devboxId);
    if (!r || (r.state === 'scoring') !== scoring) return false;
    const d = await this.deps.devboxById(devboxId);
    if (d && d.status !== 'shutdown' && d.status !== 'failure') return false;
    const reason = d?.shutdownReason ?? d?.failureReason ?? 'gone';
    const to = d?.shutdownReason && TIMEOUT_REASONS.has(d.shutdownReason) ? 'timeout' : 'failed';
    const ended = await this.deps.service.change(r, scoring ? ['scoring'] : ['running', 'scored'], to, {
      endTimeMs: Date.now(),
      endReason: `the run's devbox ended: ${d?.status ?? 'missing'} (${reason})`,
    });
    return ended !== undefined;
  }

  private async score(job: Job): Promise<void> {
    await this.ready;
    const { service } = this.deps;
    const run = await service.runs.getById(job.subjectId);
    // A crash between `scored` (complete asked) and the completion: finish it.
    if (run?.state === 'scored' && run.completeRequested) return void (await service.finishComplete(run));
    if (!run || run.state !== 'scoring') return;
    const scenario = await this.deps.scenarios.getById(run.scenarioId);
    if (!scenario) return this.scoringFailed(run.id, `scenario ${run.scenarioId} is gone`);
    let devbox = await this.deps.devboxById(run.devboxId);
    // A box its owner suspended is brought back for scoring, never failed with its disk.
    if (devbox && (devbox.status === 'suspended' || devbox.status === 'suspending')) devbox = await this.resumeForScoring(run.accountId, devbox);
    if (devbox && devbox.status !== 'running' && !['shutdown', 'failure', 'suspended'].includes(devbox.status)) {
      devbox = (await this.deps.devboxes().waitForStatus(run.accountId, run.devboxId, ['running', 'shutdown', 'failure', 'suspended'], BOOT_WAIT_MS)) ?? devbox;
    }
    const sandbox = this.deps.sandboxOf(run.devboxId);
    if (!devbox || devbox.status !== 'running' || !sandbox) {
      return this.scoringFailed(run.id, `nothing to score: the run's devbox is ${devbox?.status ?? 'gone'}`);
    }
    const env = await this.deps.devboxes().environmentOf(devbox);
    // Scoring is work in the box like a command: the box is not idle meanwhile.
    this.deps.devboxes().busy(devbox.id, 1);
    const result = await scoreRun(this.deps.boxJobs, run, scenario, {
      devbox,
      sandbox,
      env,
      customScorer: (t) => this.deps.scorers.find(scenario.accountId, t),
    }).finally(() => this.deps.devboxes().busy(run.devboxId, -1));
    // A box that ended under the scorers (its keep-alive ran out) ends the run as it would have while running.
    if (await this.boxEnded(run.devboxId, true)) return;
    const scored = await service.change(run, ['scoring'], 'scored', { scoringResult: result });
    if (scored?.completeRequested) await service.finishComplete(scored);
  }

  private async resumeForScoring(accountId: string, d: Devbox): Promise<Devbox | undefined> {
    const devboxes = this.deps.devboxes();
    if (d.status === 'suspending') d = (await devboxes.waitForStatus(accountId, d.id, ['suspended', 'running', 'shutdown', 'failure'], BOOT_WAIT_MS)) ?? d;
    if (d.status !== 'suspended') return d;
    this.deps.log.info({ devbox: d.id }, 'resuming a suspended devbox to score its scenario run');
    // A racing resume (the owner's) is fine: the wait below then sees it come up.
    await this.deps.resume(accountId, d.id).catch((err) => this.deps.log.warn({ err, devbox: d.id }, 'resume for scoring failed'));
    return this.deps.devboxById(d.id);
  }

  /** A run that cannot be scored fails, and its box goes. */
  private async scoringFailed(runId: string, why: string): Promise<void> {
    const { service } = this.deps;
    const run = await service.runs.getById(runId);
    if (!run) return;
    const failed = await service.change(run, ['scoring'], 'failed', { endTimeMs: Date.now(), endReason: why });
    if (failed) await service.shutdownBox(failed);
  }
}
