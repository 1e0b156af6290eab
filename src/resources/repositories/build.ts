import { Gate } from '../../lib/gate.js';
import type { Logger } from '../../lib/logger.js';
import type { OutboundGuard } from '../../platform/outbound/index.js';
import type { BoxServices } from '../../platform/boxlink/index.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Store } from '../../platform/store/types.js';
import type { ResourceLimits, RuntimeDriver } from '../../runtime/driver.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { buildClones } from './build-clone.js';
import { codeMountExtensions } from './code-mount.js';
import type { RepositoryConfig } from './config.js';
import { GitRelay } from './git-relay.js';
import { InspectionRunner } from './inspection-runner.js';
import { RepositoryService, type BlueprintRef } from './repository-service.js';
import { SqlRepositoryStore } from './sql-repository-store.js';

export { REPOSITORIES_SCHEMA } from './schema.js';
export { repositoryRoutes } from './routes/index.js';
export { GIT_PREFIX } from './git-relay.js';
export { INSPECT_JOB } from './repository-service.js';
export type { BuildClones } from './build-clone.js';

/** Inspections that may wait for a slot; past it an inspection's job fails and retries later. */
const INSPECTION_QUEUE = 10_000;

export interface RepositoriesModule {
  service: RepositoryService;
  runner: InspectionRunner;
  /** The box service that fetches repositories for boxes (GIT_PREFIX). */
  relay: GitRelay;
  codeMounts: ReturnType<typeof codeMountExtensions>;
  /** What blueprint builds clone their code mounts with. */
  buildClones: ReturnType<typeof buildClones>;
}

/** The repositories' services, built by their module (module.ts), which registers `runner` as the inspection job's handler. */
export function buildRepositories(deps: {
  store: Store;
  sealer: Sealer;
  runtime: RuntimeDriver;
  boxServices: () => BoxServices;
  servicesPort: number;
  jobs: () => JobRunner;
  config: RepositoryConfig;
  /** Sandbox limits of an inspection (the default devbox size). */
  limits: ResourceLimits;
  blueprint(accountId: string, id: string): Promise<BlueprintRef | undefined>;
  /** Layers of another node's blueprint, fetched before an inspection's box boots on this one. */
  ensureLocal(layers: readonly string[]): Promise<void>;
  /** The outbound guard the git relay's connections pass. */
  outbound: OutboundGuard;
  log: Logger;
}): RepositoriesModule {
  const store = new SqlRepositoryStore(deps.store.db);
  const relay = new GitRelay(deps.config.gitBaseUrl, deps.log.child({ component: 'git-relay' }), deps.outbound);
  const service = new RepositoryService(store, deps.sealer, deps.jobs, deps.blueprint, deps.log);
  const runner = new InspectionRunner(store, () => service, {
    runtime: deps.runtime,
    boxServices: deps.boxServices,
    relay,
    servicesPort: deps.servicesPort,
    limits: deps.limits,
    timeoutMs: deps.config.inspectionTimeoutSeconds * 1000,
    gate: new Gate(deps.config.inspections, INSPECTION_QUEUE),
    blueprint: deps.blueprint,
    ensureLocal: deps.ensureLocal,
    log: deps.log,
  });
  const codeMounts = codeMountExtensions({
    store,
    repos: () => service,
    relay,
    servicesPort: deps.servicesPort,
    timeoutMs: deps.config.codeMountTimeoutSeconds * 1000,
  });
  const clones = buildClones({ store, repos: () => service, relay, boxServices: deps.boxServices, servicesPort: deps.servicesPort });
  return { service, runner, relay, codeMounts, buildClones: clones };
}

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './reseal.js';
