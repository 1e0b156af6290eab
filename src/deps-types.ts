// What the composition root (deps.ts) builds: each service once, named here with what it is for. Kept apart
// from the wiring, which alone is long; routes and tests import this shape only.
import type { Gate } from './lib/gate.js';
import type { BoxServices } from './platform/boxlink/index.js';
import type { IdempotencyStore, Store } from './platform/store/types.js';
import type { AccountService } from './resources/accounts/index.js';
import type { AgentService } from './resources/agents/index.js';
import type { AxonsModule } from './resources/axons/index.js';
import type { BenchmarksModule } from './resources/benchmarks/index.js';
import type { BenchmarkJobsModule } from './resources/benchmark-jobs/index.js';
import type { BlueprintsModule } from './resources/blueprints/index.js';
import type { DevboxService } from './resources/devboxes/index.js';
import type { Lifecycle } from './resources/devboxes/index.js';
import type { StatusEvents } from './resources/devboxes/index.js';
import type { EvictionModule } from './resources/evictions/index.js';
import type { ExecutionService } from './resources/executions/index.js';
import type { FileService } from './resources/files/index.js';
import type { AgentGateway } from './resources/gateway-configs/index.js';
import type { McpModule } from './resources/mcp-configs/index.js';
import type { NetworkPolicyService } from './resources/network-policies/index.js';
import type { ObjectService } from './resources/objects/index.js';
import type { PtyFront, PtySessions, PtyTunnels } from './resources/pty/index.js';
import type { RepositoriesModule } from './resources/repositories/index.js';
import type { ScenariosModule } from './resources/scenarios/index.js';
import type { SecretService } from './resources/secrets/index.js';
import type { Sealer } from './platform/sealing/sealer.js';
import type { SnapshotService } from './resources/snapshots/index.js';
import type { SuspendService } from './resources/snapshots/index.js';
import type { SshFront, SshKeyService } from './resources/ssh/index.js';
import type { TunnelFront, TunnelService } from './resources/tunnels/index.js';
import type { RuntimeDriver } from './runtime/driver.js';

/** The composition root: every store, driver and service is built once, here, with explicit arguments. */
export interface Deps {
  store: Store;
  /** DEVBOXD_NODE_NAME: the devboxes, snapshots and x-request-id markers this server owns. */
  node: string;
  runtime: RuntimeDriver;
  accounts: AccountService;
  idempotency: IdempotencyStore;
  events: StatusEvents;
  lifecycle: Lifecycle;
  devboxes: DevboxService;
  executions: ExecutionService;
  files: FileService;
  snapshots: SnapshotService;
  suspend: SuspendService;
  /** The authenticated cipher under the master key (secret values; reusable for tokens). */
  sealer: Sealer;
  secrets: SecretService;
  networkPolicies: NetworkPolicyService;
  /** Storage objects: records, their blobs, presigned upload and download URLs, object mounts. */
  objects: ObjectService;
  /** Agents: records; their installs into boxes run as a devbox boot step. */
  agents: AgentService;
  /** MCP configs, the box tokens and the MCP hub (served to boxes at /mcp on the box-services link). */
  mcp: McpModule;
  /** Bounds the read_file_contents / write_file_contents requests held in memory at once. */
  fileContentsGate: Gate;
  /** Bounds the upload_file / download_file streams running at once (each holds stream buffers). */
  fileTransferGate: Gate;
  /** The agent gateway: gateway configs, the boxes' tokens and the proxy boxes reach them through. */
  gateway: AgentGateway;
  /** The HTTP services a box reaches from inside (MCP hub, agent gateway): `boxServices.route(prefix, handler)`. */
  boxServices: BoxServices;
  /** Tunnels: enable/remove and the view (service); the traffic on the main port, ahead of the API (front). */
  tunnels: { service: TunnelService; front: TunnelFront };
  /** Blueprints: the service (routes, the operator's publish), the build runner (the build job's handler). */
  blueprints: BlueprintsModule;
  /** PTY tunnels (create_pty_tunnel), the terminal sessions, and their endpoints on the tunnel host names. */
  pty: { tunnels: PtyTunnels; sessions: PtySessions; front: PtyFront };
  /** SSH: create_ssh_key (keys) and the SSH front on its own ports (front.listen() at start). */
  ssh: { keys: SshKeyService; front: SshFront };
  /** Evictions: the watch stream's source, drains (`devboxd drain`, SIGTERM with DEVBOXD_EVICT_ON_SHUTDOWN=suspend), memory pressure. */
  evictions: EvictionModule;
  /** Axons: event streams, their SQL databases, the broker mounts that feed them to agents in boxes. */
  axons: AxonsModule;
  /** Scorers, scenarios and scenario runs (runs score as durable jobs in their devboxes). */
  scenarios: ScenariosModule;
  /** Repository connections, their inspections (a job), code mounts and the git relay boxes fetch through. */
  repositories: RepositoriesModule;
  /** Benchmarks and benchmark runs (a durable start job; scenario runs started as slots free up), the built-in public benchmark. */
  benchmarks: BenchmarksModule;
  /** Benchmark jobs: agents run by devboxd in every scenario's box, then scored (a durable start job; trials resume after a restart). */
  benchmarkJobs: BenchmarkJobsModule;
  /** Stops background work and closes what was opened, in reverse order. Devboxes keep running. */
  close(): Promise<void>;
}
