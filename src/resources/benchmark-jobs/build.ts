import type { Logger } from '../../lib/logger.js';
import type { JobKind, JobRunner } from '../../platform/jobs/job-runner.js';
import type { Store } from '../../platform/store/types.js';
import type { BenchmarkJobConfig } from './config.js';
import { BENCHMARK_JOB, BenchmarkJobService } from './job-service.js';
import type { BenchmarkJobPorts } from './ports.js';

export { BENCHMARK_JOBS_SCHEMA } from './schema.js';
export { benchmarkJobRoutes } from './routes/index.js';
export { BENCHMARK_JOB } from './job-service.js';
export type { BenchmarkJobPorts } from './ports.js';

export interface BenchmarkJobsModule {
  service: BenchmarkJobService;
  /** Durable job kinds, registered with the job runner by the module (background: a pass may start devboxes). */
  jobs: Record<string, JobKind>;
  /** At start, after benchmark runs resumed: a pass over every running job of this node. */
  start(): Promise<void>;
  stop(): void;
}

/** The benchmark jobs' services, built by their module (module.ts); what they drive is reached through its ports. */
export function buildBenchmarkJobs(deps: {
  store: Store;
  ports: BenchmarkJobPorts;
  jobs: () => JobRunner;
  node: string;
  config: BenchmarkJobConfig;
  log: Logger;
}): BenchmarkJobsModule {
  const service = new BenchmarkJobService(deps.store, deps.ports, deps.jobs, { ...deps.config, node: deps.node }, deps.log);
  return {
    service,
    jobs: { [BENCHMARK_JOB]: { run: (job) => service.runJob(job.subjectId), exhausted: (job, err) => service.driver.fail(job.subjectId, err) } },
    start: () => service.reconcile(),
    stop: () => service.driver.stop(),
  };
}
