import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps-types.js';
import type { ModuleSchema } from '../platform/store/module-schema.js';
import { accountRoutes } from './accounts/index.js';
import { apiKeyRoutes } from './apikeys/index.js';
import { devboxRoutes } from './devboxes/index.js';
import { executionRoutes } from './executions/index.js';
import { fileRoutes } from './files/index.js';
import { GATEWAY_SCHEMA, gatewayRoutes } from './gateway-configs/index.js';
import { healthRoutes } from './health/index.js';
import { MCP_SCHEMA, mcpConfigRoutes } from './mcp-configs/index.js';
import { networkPolicyRoutes } from './network-policies/index.js';
import { NETWORK_POLICIES_SCHEMA } from './network-policies/index.js';
import { secretRoutes } from './secrets/index.js';
import { SECRETS_SCHEMA } from './secrets/index.js';
import { snapshotRoutes } from './snapshots/index.js';
import { TUNNELS_SCHEMA, tunnelRoutes } from './tunnels/index.js';
import { EVICTIONS_SCHEMA, evictionRoutes } from './evictions/index.js';
import { objectRoutes } from './objects/index.js';
import { OBJECTS_SCHEMA } from './objects/index.js';
import { SSH_KEYS_SCHEMA, sshRoutes } from './ssh/index.js';
import { BLUEPRINTS_SCHEMA, blueprintRoutes } from './blueprints/index.js';
import { PTY_SCHEMA, ptyRoutes } from './pty/index.js';
import { REPOSITORIES_SCHEMA, repositoryRoutes } from './repositories/index.js';
import { AGENTS_SCHEMA, agentRoutes } from './agents/index.js';
import { AXONS_SCHEMA, axonRoutes } from './axons/index.js';
import { SCENARIOS_SCHEMA, scenarioModuleRoutes } from './scenarios/index.js';
import { BENCHMARKS_SCHEMA, benchmarkRoutes } from './benchmarks/index.js';
import { BENCHMARK_JOBS_SCHEMA, benchmarkJobRoutes } from './benchmark-jobs/index.js';

/**
 * The tables of resource modules that migrate their own (`<module>/schema.ts`), applied in this order after
 * the core schema. The core resources (accounts, devboxes, executions, snapshots) predate modules and keep
 * theirs in src/platform/store/{sqlite,postgres}/migrations.ts.
 */
export const MODULE_SCHEMAS: readonly ModuleSchema[] = [
  SECRETS_SCHEMA,
  MCP_SCHEMA,
  GATEWAY_SCHEMA,
  NETWORK_POLICIES_SCHEMA,
  TUNNELS_SCHEMA,
  EVICTIONS_SCHEMA,
  OBJECTS_SCHEMA,
  BLUEPRINTS_SCHEMA,
  AGENTS_SCHEMA,
  AXONS_SCHEMA,
  SCENARIOS_SCHEMA,
  REPOSITORIES_SCHEMA,
  BENCHMARKS_SCHEMA,
  SSH_KEYS_SCHEMA,
  PTY_SCHEMA,
  BENCHMARK_JOBS_SCHEMA,
];

/** Every resource's routes, each one hop from its path to the file that serves it. */
export async function registerRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  healthRoutes(app, deps.store);
  await app.register(accountRoutes, { accounts: deps.accounts });
  await app.register(apiKeyRoutes, { accounts: deps.accounts });
  await app.register(devboxRoutes, { devboxes: deps.devboxes, suspend: deps.suspend });
  await app.register(executionRoutes, { executions: deps.executions });
  await app.register(fileRoutes, { files: deps.files, devboxes: deps.devboxes, contentsGate: deps.fileContentsGate, transferGate: deps.fileTransferGate });
  await app.register(snapshotRoutes, { snapshots: deps.snapshots });
  await app.register(secretRoutes, { secrets: deps.secrets });
  await app.register(mcpConfigRoutes, { configs: deps.mcp.configs, tokens: deps.mcp.tokens, devboxes: deps.devboxes, hubUrl: deps.mcp.hubUrl });
  await app.register(gatewayRoutes, { gatewayConfigs: deps.gateway.configs, gatewayBindings: deps.gateway.bindings, devboxes: deps.devboxes });
  await app.register(networkPolicyRoutes, { policies: deps.networkPolicies });
  await app.register(tunnelRoutes, { tunnels: deps.tunnels.service });
  await app.register(objectRoutes, { objects: deps.objects });
  await app.register(evictionRoutes, { evictions: deps.evictions.service });
  await app.register(sshRoutes, { keys: deps.ssh.keys });
  await app.register(blueprintRoutes, { blueprints: deps.blueprints.service });
  await app.register(ptyRoutes, { ptyTunnels: deps.pty.tunnels });
  await app.register(repositoryRoutes, { repositories: deps.repositories.service });
  await app.register(agentRoutes, { agents: deps.agents });
  await app.register(axonRoutes, { axons: deps.axons.service });
  await app.register(scenarioModuleRoutes, { scenarios: deps.scenarios, readLogs: (a, d, f) => deps.executions.logs(a, d, f) });
  await app.register(benchmarkRoutes, { benchmarks: deps.benchmarks.service, runs: deps.benchmarks.runs, scenarioRuns: () => deps.scenarios.runs });
  await app.register(benchmarkJobRoutes, { jobs: deps.benchmarkJobs.service });
}
