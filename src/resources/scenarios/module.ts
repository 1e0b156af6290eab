import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { DEVBOX_STATUSES, devboxesModule, TERMINAL } from '../devboxes/index.js';
import { executionsModule } from '../executions/index.js';
import { secretsModule } from '../secrets/index.js';
import { snapshotsModule } from '../snapshots/index.js';
import { buildScenarios, SCENARIOS_SCHEMA, type ScenariosModule, scenarioModuleRoutes } from './build.js';
import { loadScenarioConfig, type ScenarioConfig } from './config.js';
import type { RunListener } from './types.js';

type ScenarioIdsOf = (accountId: string, benchmarkId: string) => Promise<string[] | undefined>;

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Scorers, scenarios and scenario runs (runs score as durable jobs in their devboxes). */
    scenarios: ScenariosModule;
    /**
     * Where the benchmarks module (which needs this one) hears of every committed run state change and answers
     * the `benchmark_id` list filter.
     */
    scenarioHooks: { onRunChanged(listener: RunListener): void; benchmarkScenarioIds(lookup: ScenarioIdsOf): void };
  }
}

/** Scorers, scenarios and scenario runs, scored by a durable job in each run's box. */
export const scenariosModule: Module<ScenarioConfig> = {
  name: 'scenarios',
  needs: [devboxesModule, executionsModule, snapshotsModule, secretsModule],
  config: (env) => loadScenarioConfig(intsOf(env)),
  schema: SCENARIOS_SCHEMA,
  build({ host, config, use }) {
    const { store } = host;
    const devboxes = use('devboxes');
    const lifecycle = use('lifecycle');
    const suspend = use('suspend');
    const secrets = use('secrets');
    const listeners: RunListener[] = [];
    let idsOf: ScenarioIdsOf | undefined;
    const scenarios = buildScenarios({
      store,
      config,
      devboxes: () => devboxes,
      devboxById: (id) => store.devboxes.getById(id),
      sandboxOf: (id) => lifecycle.active.get(id)?.sandbox,
      boxJobs: use('boxJobs'),
      resume: (accountId, id) => suspend.resume(accountId, id),
      liveDevboxIds: async () => (await store.devboxes.listByStatus(DEVBOX_STATUSES.filter((s) => !TERMINAL.has(s)))).map((d) => d.id),
      jobs: () => host.jobs,
      openJobs: () => store.jobs.listOpen(host.node),
      secretExists: async (accountId, ref) => (await secrets.resolve(accountId, ref)) !== undefined,
      runListeners: listeners,
      // No benchmarks module: no benchmark is known, so the filter matches none.
      benchmarkScenarioIds: (accountId, id) => (idsOf ? idsOf(accountId, id) : Promise.resolve(undefined)),
      log: host.logger.child({ component: 'scenarios' }),
    });
    for (const [kind, handler] of Object.entries(scenarios.jobs)) host.jobs.register(kind, handler, { background: true });
    use('devboxExtensions').onStopped((id, ended) => scenarios.onStopped(id, ended));
    const scenarioHooks = {
      onRunChanged: (listener: RunListener) => void listeners.push(listener),
      benchmarkScenarioIds(lookup: ScenarioIdsOf) {
        if (idsOf) throw new Error('a second benchmark_id filter for scenarios');
        idsOf = lookup;
      },
    };
    return { scenarios, scenarioHooks };
  },
  routes: (app, s) => app.register(scenarioModuleRoutes, { scenarios: s.scenarios, readLogs: (a, d, f) => s.executions.logs(a, d, f) }),
  // Runs whose box ended while the server was down end now; resumed scoring jobs were waiting for the adoption.
  start: { run: (s) => s.scenarios.reconcile() },
};
