import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { agentsModule } from '../agents/index.js';
import { benchmarksModule } from '../benchmarks/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { executionsModule } from '../executions/index.js';
import { filesModule } from '../files/index.js';
import { scenariosModule } from '../scenarios/index.js';
import { BENCHMARK_JOBS_SCHEMA, benchmarkJobRoutes, type BenchmarkJobsModule, buildBenchmarkJobs } from './build.js';
import { type BenchmarkJobConfig, loadBenchmarkJobConfig } from './config.js';
import { benchmarkJobPorts } from './wire.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Benchmark jobs: agents run by devboxd in every scenario's box, then scored (a durable start job; trials resume after a restart). */
    benchmarkJobs: BenchmarkJobsModule;
  }
}

/** Benchmark jobs: an agent run by devboxd in every scenario's box of a benchmark, then scored. */
export const benchmarkJobsModule: Module<BenchmarkJobConfig> = {
  name: 'benchmark-jobs',
  needs: [benchmarksModule, scenariosModule, agentsModule, devboxesModule, executionsModule, filesModule],
  config: (env) => loadBenchmarkJobConfig(intsOf(env)),
  schema: BENCHMARK_JOBS_SCHEMA,
  build({ host, config, use }) {
    const ports = benchmarkJobPorts({
      benchmarks: use('benchmarks'),
      scenarios: use('scenarios'),
      agents: use('agents'),
      devboxes: use('devboxes'),
      executions: use('executions'),
      files: use('files'),
    });
    const benchmarkJobs = buildBenchmarkJobs({
      store: host.store,
      node: host.node,
      config,
      jobs: () => host.jobs,
      log: host.logger.child({ component: 'benchmark-jobs' }),
      ports,
    });
    // Background: a pass may start devboxes.
    for (const [kind, handler] of Object.entries(benchmarkJobs.jobs)) host.jobs.register(kind, handler, { background: true });
    return { benchmarkJobs };
  },
  routes: (app, s) => app.register(benchmarkJobRoutes, { jobs: s.benchmarkJobs.service }),
  // After benchmark runs resumed (their module's run phase comes first): a pass over every running job.
  start: { run: (s) => s.benchmarkJobs.start() },
  close: (s) => s.benchmarkJobs.stop(),
};
