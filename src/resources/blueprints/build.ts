import { Gate } from '../../lib/gate.js';
import type { Logger } from '../../lib/logger.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Store } from '../../platform/store/types.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import type { HostCapacity } from '../devboxes/index.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { ObjectContextSource, type ObjectReader } from './build-context.js';
import { BuildEngine } from './build-engine.js';
import { BuildRunner, type BuildNetwork, type LayerCopies } from './build-runner.js';
import { BlueprintService } from './blueprint-service.js';
import type { CodeClones } from './code-mounts.js';
import { blueprintResolver } from './devbox-extensions.js';
import { SqlBlueprintStore } from './sql-blueprint-store.js';

export { BLUEPRINTS_SCHEMA } from './schema.js';
export { blueprintRoutes } from './routes/index.js';
export { BUILD_JOB } from './blueprint-service.js';
export { SERVICE_PULL_QUEUE, serviceBootStep } from './service-sidecars.js';

export interface BlueprintsModule {
  service: BlueprintService;
  runner: BuildRunner;
  store: SqlBlueprintStore;
  resolver: ReturnType<typeof blueprintResolver>;
}

/** The blueprints' services, built by their module (module.ts), which registers `runner` as the build job's handler. */
export function buildBlueprints(deps: {
  store: Store;
  runtime: RuntimeDriver;
  jobs: () => JobRunner;
  node: string;
  host: HostCapacity;
  builds: number;
  /** Builds one account may have queued or running at once. */
  accountBuilds: number;
  timeoutMs: number;
  reveal(accountId: string, secret: string): Promise<string>;
  secretExists(accountId: string, ref: string): Promise<boolean>;
  network?: BuildNetwork;
  /** Storage objects: build contexts are read from them. */
  objects: () => ObjectReader;
  /** Seals the services' image passwords and code mounts' tokens. */
  sealer: Pick<Sealer, 'seal' | 'open'>;
  /** Clones code mounts into images: the repositories module's, once it registered (it needs this module). */
  code?: () => CodeClones | undefined;
  /** The blob store's copies of layers (the layers module). */
  layers?: LayerCopies;
  log: Logger;
}): BlueprintsModule {
  const store = new SqlBlueprintStore(deps.store.db);
  const engine = new BuildEngine(deps.runtime, {
    get: async (k) => {
      const layer = await store.cachedLayer(deps.node, k);
      if (layer) await store.touchCache(deps.node, k);
      return layer;
    },
    put: (k, l) => store.cacheLayer(deps.node, k, l),
  });
  const contexts = new ObjectContextSource(deps.objects);
  const runner = new BuildRunner(store, engine, contexts, deps.runtime, new Gate(deps.builds, 100_000), deps.log, {
    node: deps.node,
    host: deps.host,
    timeoutMs: deps.timeoutMs,
    reveal: deps.reveal,
    network: deps.network,
    code: deps.code,
    sealer: deps.sealer,
    layers: deps.layers,
  });
  const service = new BlueprintService(
    store,
    deps.jobs,
    contexts,
    deps.network,
    deps.secretExists,
    deps.runtime,
    deps.host,
    deps.node,
    deps.log,
    deps.sealer,
    deps.accountBuilds,
    deps.layers,
  );
  return { service, runner, store, resolver: blueprintResolver(() => store) };
}

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './credentials.js';
export * from './glob.js';
export * from './preview.js';
export * from './sql-blueprint-store.js';
