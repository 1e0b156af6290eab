// The benchmark jobs module's ports over the services the composition root built: kept apart from deps.ts,
// whose wiring alone is long. Services are reached through thunks, called once a job runs.
import type { Logger } from './lib/logger.js';
import type { JobRunner } from './platform/jobs/job-runner.js';
import type { Store } from './platform/store/types.js';
import type { AgentService } from './resources/agents/index.js';
import { type BenchmarkJobPorts, type BenchmarkJobsModule, buildBenchmarkJobs } from './resources/benchmark-jobs/index.js';
import type { Config } from './config.js';
import type { BenchmarksModule } from './resources/benchmarks/index.js';
import type { DevboxService } from './resources/devboxes/index.js';
import type { DevboxStatus } from './resources/devboxes/index.js';
import type { ExecutionService } from './resources/executions/index.js';
import type { FileService } from './resources/files/index.js';
import type { ScenariosModule } from './resources/scenarios/index.js';

/** Lines of an agent's output a failure message quotes. */
const TAIL_LINES = 20;

/** The services jobs drive, built after the module: read once a job runs. */
type Services = () => {
  benchmarks: BenchmarksModule;
  scenarios: ScenariosModule;
  agents: AgentService;
  devboxes: DevboxService;
  executions: ExecutionService;
  files: FileService;
};

export { BENCHMARK_JOB } from './resources/benchmark-jobs/index.js';

/** The benchmark jobs module over the services it drives. */
export function wireBenchmarkJobs(deps: { store: Store; config: Config; jobs: () => JobRunner; logger: Logger }, services: Services): BenchmarkJobsModule {
  const { store, config, jobs, logger } = deps;
  const log = logger.child({ component: 'benchmark-jobs' });
  return buildBenchmarkJobs({ store, node: config.nodeName, config: config.benchmarkJobs, jobs, log, ports: benchmarkJobPorts(services) });
}

function benchmarkJobPorts(s: Services): BenchmarkJobPorts {
  const page = { limit: 20, includeTotalCount: false };
  return {
    benchmarks: {
      get: (accountId, id) => s().benchmarks.service.get(accountId, id),
      byName: async (accountId, name) => {
        const own = await s().benchmarks.service.benchmarks.getByName(accountId, name);
        if (own) return own;
        return (await s().benchmarks.service.listPublic({ name }, page)).items.find((b) => b.name === name);
      },
    },
    get jobRuns() {
      return s().benchmarks.jobRuns;
    },
    scenarios: {
      get: (accountId, id) => s().scenarios.scenarios.get(accountId, id),
      byName: async (accountId, name) => {
        const service = s().scenarios.scenarios;
        const own = (await service.list(accountId, { name }, page)).items.find((x) => x.name === name && x.status === 'active');
        return own ?? (await service.listPublic({ name }, page)).items.find((x) => x.name === name && x.status === 'active');
      },
    },
    scenarioRuns: {
      start: (accountId, input) => s().scenarios.runs.start(accountId, input),
      get: (accountId, id) => s().scenarios.runs.get(accountId, id),
      list: (accountId, filter, p) => s().scenarios.runs.list(accountId, filter, p),
      checkRequirements: (accountId, scenario, input) => s().scenarios.runs.checkRequirements(accountId, scenario, input),
      complete: (accountId, id, signal) => s().scenarios.runs.complete(accountId, id, signal),
      cancel: (accountId, id) => s().scenarios.runs.cancel(accountId, id),
    },
    agents: {
      get: (accountId, id) => s().agents.get(accountId, id),
      byName: (accountId, name) => s().agents.store.latestByName(accountId, name),
      checkMount: async (accountId, agentId, agentPath, field) => {
        await s().agents.resolveMount(accountId, { index: 0, agentId, agentName: null, agentPath, authToken: null }, field);
      },
    },
    devboxes: {
      waitForStatus: async (accountId, id, statuses, timeoutMs, signal) => {
        const d = await s().devboxes.waitForStatus(accountId, id, statuses as DevboxStatus[], timeoutMs, signal);
        return d && { status: d.status, reason: d.failureReason ?? d.shutdownReason };
      },
    },
    files: {
      write: (accountId, devboxId, path, contents) => s().files.write(accountId, devboxId, path, contents),
    },
    executions: {
      start: (accountId, devboxId, command, commandId) => s().executions.start(accountId, devboxId, { command, commandId }),
      awaitCompleted: (accountId, devboxId, id, timeoutMs, signal) => s().executions.waitFor(accountId, devboxId, id, ['completed'], timeoutMs, signal),
      kill: (accountId, devboxId, id) => s().executions.kill(accountId, devboxId, id, true),
      tail: async (accountId, devboxId, id) => {
        const e = await s().executions.get(accountId, devboxId, id);
        const { stdout, stderr } = await s().executions.output(e, TAIL_LINES);
        return (stderr.text.trim() || stdout.text.trim()).slice(-2000);
      },
    },
  };
}
