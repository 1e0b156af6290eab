import type { Logger } from '../../lib/logger.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Job } from '../../platform/jobs/types.js';
import type { Store } from '../../platform/store/types.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { DevboxService } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import type { BoxJobs } from '../executions/index.js';
import type { ScenarioConfig } from './config.js';
import { RunProgress } from './run-progress.js';
import { ScenarioRunService, SCORE_JOB } from './run-service.js';
import { ScenarioService } from './scenario-service.js';
import { ScorerService } from './scorer-service.js';
import { SqlScenarioStore } from './sql-scenario-store.js';
import type { RunListener } from './types.js';
import type { ScenariosModule } from './routes/options.js';

export { SCENARIOS_SCHEMA } from './schema.js';
export { scenarioModuleRoutes } from './routes/index.js';
export type { ScenariosModule } from './routes/options.js';
export { SCORE_JOB } from './run-service.js';
export { RUN_TERMINAL } from './types.js';
export type { RunListFilter, Scenario, ScenarioRun, StartRunInput } from './types.js';

/** The scenarios' services, built by their module (module.ts), which registers the scoring job and the stop listener. */
export function buildScenarios(deps: {
  store: Store;
  config: ScenarioConfig;
  devboxes: () => DevboxService;
  devboxById(id: string): Promise<Devbox | undefined>;
  sandboxOf(id: string): Sandbox | undefined;
  boxJobs: BoxJobs;
  /** Resumes a suspended devbox (scoring brings a suspended run box back). */
  resume(accountId: string, id: string): Promise<unknown>;
  /** Ids of the devboxes not ended (start-up reconcile). */
  liveDevboxIds(): Promise<string[]>;
  jobs: () => JobRunner;
  /** This node's open durable jobs (the start-up reconcile starts the cut scoring jobs). */
  openJobs(): Promise<Job[]>;
  secretExists(accountId: string, ref: string): Promise<boolean>;
  /** Told of every committed run state change (benchmark runs). */
  runListeners: RunListener[];
  /** A benchmark's scenario ids for the `benchmark_id` list filter (undefined: unknown benchmark). */
  benchmarkScenarioIds?: (accountId: string, benchmarkId: string) => Promise<string[] | undefined>;
  log: Logger;
}): ScenariosModule {
  const scorers = new ScorerService(deps.store.db, deps.config.accountMaxScorers);
  const scenarioStore = new SqlScenarioStore(deps.store.db);
  const scenarios = new ScenarioService(scenarioStore, scorers, deps.config.accountMaxScenarios, deps.benchmarkScenarioIds);
  // The devbox service is built after the lifecycle this module listens to: reached by a thunk.
  const devboxes = deps.devboxes;
  const runs = new ScenarioRunService({
    store: deps.store,
    scenarios,
    devboxes,
    jobs: deps.jobs,
    secretExists: deps.secretExists,
    listeners: deps.runListeners,
    log: deps.log,
  });
  const progress = new RunProgress({
    service: runs,
    scenarios: scenarioStore,
    scorers,
    devboxes,
    devboxById: deps.devboxById,
    sandboxOf: deps.sandboxOf,
    boxJobs: deps.boxJobs,
    resume: deps.resume,
    liveDevboxIds: deps.liveDevboxIds,
    jobs: deps.jobs,
    openJobs: deps.openJobs,
    log: deps.log,
  });
  return { scorers, scenarios, runs, jobs: { [SCORE_JOB]: progress.job }, onStopped: progress.onStopped, reconcile: () => progress.reconcile() };
}

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './routes/schemas.js';
export * from './scenario-service.js';
export * from './types.js';
