import type { AgentService } from '../agents/index.js';
import type { BenchmarksModule } from '../benchmarks/index.js';
import type { DevboxService, DevboxStatus } from '../devboxes/index.js';
import type { ExecutionService } from '../executions/index.js';
import type { FileService } from '../files/index.js';
import type { ScenariosModule } from '../scenarios/index.js';
import type { BenchmarkJobPorts } from './ports.js';

const TAIL_LINES = 20;

/** The services benchmark jobs drive, as the module got them from the modules it needs. */
export interface JobServices {
  benchmarks: BenchmarksModule;
  scenarios: ScenariosModule;
  agents: AgentService;
  devboxes: DevboxService;
  executions: ExecutionService;
  files: FileService;
}

/** The benchmark jobs' ports (what a job asks of benchmarks, scenarios, agents, boxes) over those services. */
export function benchmarkJobPorts(services: JobServices): BenchmarkJobPorts {
  const s = () => services;
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
