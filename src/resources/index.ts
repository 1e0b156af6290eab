import type { AnyHostModule } from '../host.js';
import { moduleOrder } from '../platform/module/index.js';
import type { SealedTexts } from '../platform/sealing/resealing.js';
import type { ModuleSchema } from '../platform/store/module-schema.js';
import { accountsModule } from './accounts/index.js';
import { agentsModule } from './agents/index.js';
import { apiKeysModule } from './apikeys/index.js';
import { auditModule } from './audit/index.js';
import { axonsModule } from './axons/index.js';
import { benchmarkJobsModule } from './benchmark-jobs/index.js';
import { benchmarksModule } from './benchmarks/index.js';
import { blueprintsModule } from './blueprints/index.js';
import { devboxesModule } from './devboxes/index.js';
import { evictionsModule } from './evictions/index.js';
import { executionsModule } from './executions/index.js';
import { filesModule } from './files/index.js';
import { gatewayConfigsModule } from './gateway-configs/index.js';
import { healthModule } from './health/index.js';
import { layersModule } from './layers/index.js';
import { mcpConfigsModule } from './mcp-configs/index.js';
import { nodesModule } from './nodes/index.js';
import { networkPoliciesModule } from './network-policies/index.js';
import { objectsModule } from './objects/index.js';
import { poolsModule } from './pools/index.js';
import { ptyModule } from './pty/index.js';
import { repositoriesModule } from './repositories/index.js';
import { routingModule } from './routing/index.js';
import { scenariosModule } from './scenarios/index.js';
import { secretsModule } from './secrets/index.js';
import { snapshotsModule } from './snapshots/index.js';
import { sshModule } from './ssh/index.js';
import { tunnelsModule } from './tunnels/index.js';

/**
 * The server's resources, one module each (see platform/module/contract.ts): adding one is its folder and a
 * line here. The composition root builds them in the order their `needs` give (ties in this order), which is
 * also the order their tables migrate, their start phases run and (reversed) they close.
 */
export const MODULES: readonly AnyHostModule[] = [
  healthModule,
  accountsModule,
  apiKeysModule,
  devboxesModule,
  layersModule,
  executionsModule,
  filesModule,
  secretsModule,
  networkPoliciesModule,
  mcpConfigsModule,
  gatewayConfigsModule,
  objectsModule,
  agentsModule,
  repositoriesModule,
  blueprintsModule,
  snapshotsModule,
  tunnelsModule,
  ptyModule,
  sshModule,
  nodesModule,
  routingModule,
  evictionsModule,
  poolsModule,
  axonsModule,
  scenariosModule,
  benchmarksModule,
  benchmarkJobsModule,
  auditModule,
];

/** The tables of `modules`, in the order they migrate (after the core tables). */
export function moduleSchemas(modules: readonly AnyHostModule[] = MODULES): ModuleSchema[] {
  return moduleOrder(modules).flatMap((m) => (m.schema ? [m.schema] : []));
}

/** Every module's tables: what the CLI's commands open the database with. */
export const MODULE_SCHEMAS: readonly ModuleSchema[] = moduleSchemas();

/** Every module's sealed texts, in module order: what `devboxd secrets rotate-key` re-seals. */
export const SEALED: readonly SealedTexts[] = moduleOrder(MODULES).flatMap((m) => (m.sealed ? [m.sealed] : []));
