import type { Logger } from '../../lib/logger.js';
import type { JobKind, JobRunner } from '../../platform/jobs/job-runner.js';
import type { Page, PageQuery, Store } from '../../platform/store/types.js';
import type { ScenarioInput } from '../scenarios/index.js';
import type { Scenario } from '../scenarios/index.js';
import { BenchmarkService } from './benchmark-service.js';
import type { BenchmarkConfig } from './config.js';
import { JobRuns } from './job-runs.js';
import type { ScenarioRunsPort, ScenariosPort } from './ports.js';
import { BenchmarkRunService, RUN_JOB } from './run-service.js';
import { STARTER_NAME, STARTER_SCENARIOS, writeProject } from './starter.js';
import type { Benchmark } from './types.js';

export { BENCHMARKS_SCHEMA } from './schema.js';
export { benchmarkRoutes } from './routes/index.js';
export { RUN_JOB } from './run-service.js';
export type { JobRuns, OpenJobRunInput } from './job-runs.js';
export type { Benchmark, BenchmarkRun, RunProfile } from './types.js';
export type { BenchmarkService } from './benchmark-service.js';

export interface BenchmarksModule {
  service: BenchmarkService;
  runs: BenchmarkRunService;
  /** The runs benchmark jobs drive (one per agent config). */
  jobRuns: JobRuns;
  /** Durable job kinds, registered with the job runner by the module (background: they may start devboxes). */
  jobs: Record<string, JobKind>;
  /** The scenario-run listener (registered with the scenarios module's `scenarioHooks`). */
  runChanged: BenchmarkRunService['runChanged'];
  /** The scenarios module's `benchmark_id` list filter. */
  scenarioIdsOf(accountId: string, benchmarkId: string): Promise<string[] | undefined>;
  /** At start, after the scenarios module's reconcile: seeds the built-in benchmark, resumes open runs. */
  start(ownerAccountId: string): Promise<void>;
}

/** The scenarios module as benchmarks use it, with the create the built-in benchmark's seed needs. */
export interface ScenariosForBenchmarks extends ScenariosPort {
  create(accountId: string, input: ScenarioInput, opts?: { isPublic?: boolean }): Promise<Scenario>;
  list(accountId: string, filter: { name?: string }, page: PageQuery): Promise<Page<Scenario>>;
}

export function buildBenchmarks(deps: {
  store: Store;
  scenarios: () => ScenariosForBenchmarks;
  scenarioRuns: () => ScenarioRunsPort;
  jobs: () => JobRunner;
  node: string;
  config: BenchmarkConfig;
  log: Logger;
}): BenchmarksModule {
  const service = new BenchmarkService(deps.store, deps.scenarios, deps.config.accountMaxBenchmarks, deps.log);
  const runs = new BenchmarkRunService(
    deps.store,
    service,
    deps.scenarios,
    deps.scenarioRuns,
    deps.jobs,
    { node: deps.node, concurrency: deps.config.concurrency, accountMaxRunning: deps.config.accountMaxRunning, leaseMs: deps.config.leaseSec * 1000 },
    deps.log,
  );
  return {
    service,
    runs,
    jobRuns: new JobRuns(deps.store, deps.node),
    jobs: { [RUN_JOB]: { run: (job) => runs.runJob(job.subjectId), exhausted: (job, err) => runs.jobExhausted(job.subjectId, err) } },
    runChanged: (r) => runs.runChanged(r),
    scenarioIdsOf: async (accountId, id) => (await service.benchmarks.get(accountId, id))?.scenarioIds,
    start: async (owner) => {
      // The built-in benchmark is a convenience: a seed that fails (another server seeding it at the same time,
      // the owner at its scenario limit) is logged and the server starts all the same.
      await seedOnce(deps.store, () => seedStarter(service, deps.scenarios(), owner, deps.log)).catch((err: Error) =>
        deps.log.warn({ err }, 'the built-in public benchmark was not created'),
      );
      await runs.reconcile();
    },
  };
}

/** Any constant: servers sharing one PostgreSQL seed one at a time (the second finds the first's benchmark). */
const SEED_LOCK = 0x62656e63;

/**
 * On PostgreSQL, holds an advisory lock for the seed (in a transaction of its own that writes nothing; the seed
 * writes through the pool). SQLite is one process: nothing to take turns with.
 */
async function seedOnce<T>(store: Store, fn: () => Promise<T>): Promise<T> {
  if (store.dialect !== 'postgres') return fn();
  return store.transaction(async (tx) => {
    await tx.db.query('SELECT pg_advisory_xact_lock(?)', [SEED_LOCK]);
    return fn();
  });
}

/**
 * Creates the built-in public benchmark and its scenarios once (owned by the built-in account). Scenarios a
 * seed that stopped half-way made are reused by name: a restart adds none.
 */
async function seedStarter(service: BenchmarkService, scenarios: ScenariosForBenchmarks, owner: string, log: Logger): Promise<Benchmark> {
  const have = await service.benchmarks.getByName(owner, STARTER_NAME);
  if (have) return have;
  const ids: string[] = [];
  for (const s of STARTER_SCENARIOS) {
    const page = await scenarios.list(owner, { name: s.name }, { limit: 100, includeTotalCount: false });
    const seeded = page.items.find((x) => x.name === s.name && x.isPublic && x.metadata.source === 'devboxd');
    if (seeded) {
      ids.push(seeded.id);
      continue;
    }
    const created = await scenarios.create(
      owner,
      {
        name: s.name,
        inputContext: { problem_statement: s.problem },
        environment: { workingDirectory: s.dir, launchParameters: { launch_commands: [writeProject(s)] } },
        scoringFunctions: [
          {
            name: 'tests',
            weight: 1,
            scorer: {
              type: 'test_based_scorer',
              test_command: s.testCommand,
              test_files: Object.entries(s.tests).map(([file_path, file_contents]) => ({ file_path, file_contents })),
            },
          },
        ],
        metadata: { source: 'devboxd' },
      },
      { isPublic: true },
    );
    ids.push(created.id);
  }
  const b = await service.create(
    owner,
    { name: STARTER_NAME, description: 'Small bug fixes in Python and shell projects, scored by their tests.', attribution: 'devboxd', scenarioIds: ids },
    { isPublic: true },
  );
  log.info({ benchmark: b.id, scenarios: ids.length }, 'built-in public benchmark created');
  return b;
}
