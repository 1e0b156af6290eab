import { EventEmitter } from 'node:events';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { DomainError, ERRORS } from '../../platform/errors.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Page, PageQuery, Store } from '../../platform/store/types.js';
import type { DevboxService } from '../devboxes/index.js';
import type { CreateDevboxInput } from '../devboxes/index.js';
import type { ScenarioService } from './scenario-service.js';
import { SqlRunStore, type RunChange } from './sql-run-store.js';
import { RUN_TERMINAL, type RunListener, type RunListFilter, type Scenario, type ScenarioRun, type ScenarioRunState, type StartRunInput } from './types.js';

/** The durable job that scores a run (and completes it when asked); its subject is the run id. */
export const SCORE_JOB = 'scenario.score';
/** How often a waiting `complete` re-reads the run (a run another server scores sends no event here). */
const REREAD_MS = 2000;
/** A state change lost to a concurrent one (the last scoring job still settling) is tried again after this. */
const pause = () => new Promise((r) => setTimeout(r, 50));
/** How long `score` retries while a conflicting scoring job is open. */
const SCORE_RETRY_MS = 5000;

export interface RunServiceDeps {
  store: Store;
  scenarios: ScenarioService;
  devboxes: () => DevboxService;
  jobs: () => JobRunner;
  /** Whether the account has the secret (name or id) a run's profile names. */
  secretExists(accountId: string, ref: string): Promise<boolean>;
  listeners: RunListener[];
  log: Logger;
}

/**
 * Scenario runs: start (the scenario's devbox), score, complete, cancel. Scoring runs as a durable job
 * (`scoring.ts` does the work, `RunProgress` drives it) so a restart mid-run loses nothing; every state
 * change is a conditional update, so concurrent requests and the job never undo each other.
 */
export class ScenarioRunService {
  readonly runs: SqlRunStore;
  private readonly changes = new EventEmitter().setMaxListeners(0);

  constructor(private readonly deps: RunServiceDeps) {
    this.runs = new SqlRunStore(deps.store.db);
  }

  /** 400 (naming each) when a required variable or secret is not provided, or a named secret does not exist. */
  async checkRequirements(accountId: string, scenario: Scenario, input: Pick<StartRunInput, 'envVars' | 'secrets'>): Promise<void> {
    const env = input.envVars ?? {};
    const secrets = input.secrets ?? {};
    const missingEnv = scenario.requiredEnvironmentVariables.filter((n) => !Object.hasOwn(env, n) && !Object.hasOwn(secrets, n));
    if (missingEnv.length) throw ERRORS.invalid(`scenario ${scenario.id} requires the environment variables ${missingEnv.join(', ')} (runProfile.envVars)`);
    const missingSecrets = scenario.requiredSecretNames.filter((n) => !Object.hasOwn(secrets, n));
    if (missingSecrets.length)
      throw ERRORS.invalid(`scenario ${scenario.id} requires the secrets ${missingSecrets.join(', ')} (runProfile.secrets: variable name → secret name)`);
    for (const [name, ref] of Object.entries(secrets)) {
      if (!(await this.deps.secretExists(accountId, ref))) throw ERRORS.invalid(`runProfile.secrets.${name}: no secret named ${ref}`);
    }
  }

  async start(accountId: string, input: StartRunInput): Promise<ScenarioRun> {
    const scenario = await this.deps.scenarios.get(accountId, input.scenarioId);
    if (scenario.status === 'archived') throw ERRORS.badState(`scenario ${scenario.id} is archived`);
    await this.checkRequirements(accountId, scenario, input);
    const env = scenario.environment;
    const box: CreateDevboxInput = {
      name: input.runName ?? null,
      environmentVariables: input.envVars ?? null,
      secrets: input.secrets ?? null,
      launchParameters: env?.launchParameters || input.launchParameters ? { ...env?.launchParameters, ...input.launchParameters } : null,
      blueprintId: env?.blueprintId ?? null,
      snapshotId: env?.snapshotId ?? null,
      objectMounts: input.mounts ?? null,
      ...input.otherMounts,
    };
    const devbox = await this.deps.devboxes().create(accountId, box);
    const run: ScenarioRun = {
      id: newId('scr'),
      accountId,
      scenarioId: scenario.id,
      devboxId: devbox.id,
      state: 'running',
      name: input.runName ?? null,
      metadata: input.metadata ?? {},
      benchmarkRunId: input.benchmarkRunId ?? null,
      purpose: input.purpose ?? null,
      environmentVariables: input.envVars ?? {},
      secretsProvided: input.secrets ?? {},
      scoringResult: null,
      completeRequested: false,
      startTimeMs: Date.now(),
      endTimeMs: null,
      endReason: null,
    };
    try {
      await this.runs.insert(run, input.attempt ?? 0);
    } catch (err) {
      // A box no run records would run for nobody.
      await this.deps
        .devboxes()
        .shutdown(accountId, devbox.id, true)
        .catch(() => undefined);
      throw err;
    }
    this.notify(run);
    return run;
  }

  async get(accountId: string, id: string): Promise<ScenarioRun> {
    const r = await this.runs.getById(id);
    if (!r || r.accountId !== accountId) throw ERRORS.notFound('scenario run', id);
    return r;
  }

  list(accountId: string, filter: RunListFilter, page: PageQuery): Promise<Page<ScenarioRun>> {
    return this.runs.list(accountId, filter, page);
  }

  /**
   * running or scored → scoring (again); a run already scoring is returned as it is. While a conflicting
   * job is open (a restart's reconcile), it retries for SCORE_RETRY_MS, then returns the run as it is.
   */
  async score(accountId: string, id: string): Promise<ScenarioRun> {
    const until = Date.now() + SCORE_RETRY_MS;
    for (;;) {
      const r = await this.get(accountId, id);
      if (r.state === 'scoring') return r;
      if (r.state !== 'running' && r.state !== 'scored') throw ERRORS.badState(`scenario run ${id} is ${r.state}; only a running or scored run can be scored`);
      const scoring = await this.beginScoring(r, false);
      if (scoring) return scoring;
      if (Date.now() > until) return r;
      await pause();
    }
  }

  /**
   * Scores the run if it is not yet scored, then shuts its devbox down and ends it `completed`; resolves
   * with the completed run. A completed run is returned as it is.
   */
  async complete(accountId: string, id: string, signal?: AbortSignal): Promise<ScenarioRun> {
    for (;;) {
      const r = await this.get(accountId, id);
      if (r.state === 'completed') return r;
      if (RUN_TERMINAL.has(r.state)) throw ERRORS.badState(`scenario run ${id} is ${r.state}; it cannot be completed`);
      if (r.state === 'scored') {
        const done = await this.finishComplete(r);
        if (done) return done;
        continue;
      }
      const asked = r.state === 'running' ? await this.beginScoring(r, true) : await this.change(r, ['scoring'], 'scoring', { completeRequested: true }, false);
      if (asked) return this.awaitEnd(accountId, id, signal);
      await pause();
    }
  }

  /** Any open run → canceled, its devbox shut down; a run already over is returned as it is. */
  async cancel(accountId: string, id: string): Promise<ScenarioRun> {
    const r = await this.get(accountId, id);
    if (RUN_TERMINAL.has(r.state)) return r;
    const canceled = await this.change(r, ['running', 'scoring', 'scored'], 'canceled', { endTimeMs: Date.now(), endReason: 'canceled by the API' });
    if (!canceled) return this.cancel(accountId, id);
    await this.shutdownBox(canceled);
    return canceled;
  }

  /** scored → completed, then the box goes; undefined when the run was no longer scored. */
  async finishComplete(r: ScenarioRun): Promise<ScenarioRun | undefined> {
    const done = await this.runs.transition(r.id, ['scored'], 'completed', { endTimeMs: Date.now() });
    if (!done) return undefined;
    // The state is committed first: the box's stop then finds the run over and leaves it alone.
    await this.shutdownBox(done);
    this.notify(done);
    return done;
  }

  /** The state change and its announcement; undefined when the run was in none of `from`. */
  async change(r: ScenarioRun, from: ScenarioRunState[], to: ScenarioRunState, change: RunChange, announce = true): Promise<ScenarioRun | undefined> {
    const after = await this.runs.transition(r.id, from, to, change);
    if (after && announce) this.notify(after);
    return after;
  }

  async shutdownBox(r: ScenarioRun): Promise<void> {
    await this.deps
      .devboxes()
      .shutdown(r.accountId, r.devboxId, true)
      .catch((err) => this.deps.log.warn({ err, run: r.id, devbox: r.devboxId }, 'shutting down the run devbox failed'));
  }

  notify(r: ScenarioRun): void {
    this.changes.emit(r.id, r);
    for (const l of this.deps.listeners) {
      try {
        l(r);
      } catch (err) {
        this.deps.log.error({ err, run: r.id }, 'scenario run listener failed');
      }
    }
  }

  /** Records the scoring job with the move to `scoring`, then starts it; undefined when the state moved first. */
  private async beginScoring(r: ScenarioRun, completeRequested: boolean): Promise<ScenarioRun | undefined> {
    const jobs = this.deps.jobs();
    const started = await this.deps.store
      .transaction(async (tx) => {
        const after = await this.runs.transition(r.id, [r.state], 'scoring', completeRequested ? { completeRequested } : {}, tx.db);
        if (!after) return undefined;
        return { after, job: await jobs.add(SCORE_JOB, r.id, tx.jobs) };
      })
      .catch((err) => {
        // A scoring job still open for this run: it is scoring already.
        if (err instanceof DomainError && err.code === 'conflict') return undefined;
        throw err;
      });
    if (!started) return undefined;
    jobs.start(started.job);
    this.notify(started.after);
    return started.after;
  }

  /** Resolves once the run is over (its announcement here, or a re-read: another server may finish it). */
  private awaitEnd(accountId: string, id: string, signal?: AbortSignal): Promise<ScenarioRun> {
    return new Promise((resolve, reject) => {
      const check = async () => {
        try {
          const r = await this.get(accountId, id);
          if (RUN_TERMINAL.has(r.state)) done(() => resolve(r));
          else if (r.state === 'scored') {
            const c = await this.finishComplete(r);
            if (c) done(() => resolve(c));
          }
        } catch (err) {
          done(() => reject(err));
        }
      };
      const onChange = (r: ScenarioRun) => void (RUN_TERMINAL.has(r.state) || r.state === 'scored' ? check() : undefined);
      const timer = setInterval(() => void check(), REREAD_MS);
      const onAbort = () => done(() => reject(ERRORS.waitTimeout('the client went away')));
      let settled = false;
      const done = (settle: () => void) => {
        if (settled) return;
        settled = true;
        clearInterval(timer);
        this.changes.off(id, onChange);
        signal?.removeEventListener('abort', onAbort);
        settle();
      };
      this.changes.on(id, onChange);
      signal?.addEventListener('abort', onAbort);
      void check();
    });
  }
}
