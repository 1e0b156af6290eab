import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { accountsModule } from '../accounts/index.js';
import { scenariosModule } from '../scenarios/index.js';
import { BENCHMARKS_SCHEMA, benchmarkRoutes, type BenchmarksModule, buildBenchmarks } from './build.js';
import { type BenchmarkConfig, loadBenchmarkConfig } from './config.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Benchmarks and benchmark runs (a durable start job; scenario runs started as slots free up), the built-in public benchmark. */
    benchmarks: BenchmarksModule;
  }
}

/** Benchmarks (sets of scenarios) and their runs; seeds the built-in public benchmark. */
export const benchmarksModule: Module<BenchmarkConfig> = {
  name: 'benchmarks',
  needs: [accountsModule, scenariosModule],
  config: (env) => loadBenchmarkConfig(intsOf(env)),
  schema: BENCHMARKS_SCHEMA,
  build({ host, config, use }) {
    const scenarios = use('scenarios');
    const benchmarks = buildBenchmarks({
      store: host.store,
      scenarios: () => scenarios.scenarios,
      scenarioRuns: () => scenarios.runs,
      jobs: () => host.jobs,
      node: host.node,
      config,
      log: host.logger.child({ component: 'benchmarks' }),
    });
    // Background: a run's job may start devboxes, which need not finish before the server serves.
    // Any server may pump any run (runs are leased, see run-lease.ts): a lost node's start jobs run elsewhere.
    for (const [kind, handler] of Object.entries(benchmarks.jobs)) host.jobs.register(kind, handler, { background: true, anyNode: true });
    use('scenarioHooks').onRunChanged((r) => benchmarks.runChanged(r));
    use('scenarioHooks').benchmarkScenarioIds((accountId, id) => benchmarks.scenarioIdsOf(accountId, id));
    return { benchmarks };
  },
  routes: (app, s) => app.register(benchmarkRoutes, { benchmarks: s.benchmarks.service, runs: s.benchmarks.runs, scenarioRuns: () => s.scenarios.runs }),
  // After the scenario runs settled (their module's run phase comes first): the seed, then every open run.
  start: { run: async (s) => s.benchmarks.start(await s.accounts.builtinAccountId()) },
  close: (s) => s.benchmarks.runs.stop(),
};
