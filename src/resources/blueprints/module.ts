import type { Module } from '../../host.js';
import { Gate } from '../../lib/gate.js';
import { visibilityCommands } from '../../platform/module/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { executionsModule } from '../executions/index.js';
import { layersModule } from '../layers/index.js';
import { networkPoliciesModule } from '../network-policies/index.js';
import { objectsModule } from '../objects/index.js';
import { secretsModule } from '../secrets/index.js';
import { BLUEPRINTS_SCHEMA, BUILD_JOB, blueprintRoutes, buildBlueprints, type BlueprintsModule, SERVICE_PULL_QUEUE, serviceBootStep } from './build.js';
import type { CodeClones } from './code-mounts.js';
import { type BlueprintConfig, loadBlueprintConfig } from './config.js';
import { BLUEPRINTS_SEALED } from './credentials.js';
import { SqlBlueprintStore } from './sql-blueprint-store.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Blueprints: the service (routes, the operator's publish), the build runner (the build job's handler). */
    blueprints: BlueprintsModule;
    /** Where the repositories module (which needs this one) gives builds their code mounts' clones. */
    blueprintCode: { serve(clones: CodeClones): void };
  }
}

/** Blueprints: image builds (a durable job), their layers, and the services a box of a blueprint starts. */
export const blueprintsModule: Module<BlueprintConfig> = {
  name: 'blueprints',
  needs: [devboxesModule, executionsModule, objectsModule, secretsModule, networkPoliciesModule, layersModule],
  schema: BLUEPRINTS_SCHEMA,
  sealed: BLUEPRINTS_SEALED,
  config: loadBlueprintConfig,
  build({ host, config, use }) {
    const secrets = use('secrets');
    const policies = use('networkPolicies');
    const egress = use('egress');
    const objects = use('objects');
    let clones: CodeClones | undefined;
    const devboxLog = use('devboxLog');
    const blueprints = buildBlueprints({
      store: host.store,
      runtime: host.runtime,
      jobs: () => host.jobs,
      node: host.node,
      host: { maxCpuCores: host.config.maxCpuCores, maxMemoryGiB: host.config.maxMemoryGiB },
      objects: () => objects,
      builds: config.blueprintBuilds,
      accountBuilds: config.blueprintAccountBuilds,
      timeoutMs: config.blueprintBuildTimeoutSeconds * 1000,
      reveal: async (accountId, name) => (await secrets.reveal(accountId, name)).value,
      secretExists: async (accountId, ref) => (await secrets.resolve(accountId, ref)) !== undefined,
      sealer: host.sealer,
      code: () => clones,
      layers: use('layers'),
      network: {
        egressOf: async (accountId, id) => (await policies.policies.get(accountId, id))?.egress,
        attach: (id, e) => egress.attachSandbox(id, e),
        detach: (id) => egress.onStopped(id, true),
      },
      log: host.logger.child({ component: 'blueprints' }),
    });
    // A build reads its inputs from the database and the blob store: any node can take over one a lost node held.
    host.jobs.register(
      BUILD_JOB,
      { run: (job) => blueprints.runner.run(job.subjectId), exhausted: (job, err) => blueprints.runner.exhausted(job.subjectId, err) },
      { anyNode: true },
    );
    const ext = use('devboxExtensions');
    // The blueprint's resolver first of those that resolve: the others see the request with its launch defaults.
    ext.resolver(blueprints.resolver, 'defaults');
    // Services start before the launch commands, which may use them.
    ext.bootStep(
      serviceBootStep({
        store: () => blueprints.store,
        runtime: host.runtime,
        sealer: host.sealer,
        readyTimeoutMs: config.serviceReadyTimeoutSeconds * 1000,
        node: host.node,
        pulls: new Gate(config.servicePulls, SERVICE_PULL_QUEUE),
        report: (devboxId, message) => devboxLog.write({ devboxId, timestampMs: Date.now(), level: 'error', source: 'entrypoint', message }),
        log: host.logger.child({ component: 'services' }),
      }),
      'services',
    );
    const blueprintCode = {
      serve(c: CodeClones) {
        if (clones) throw new Error('a second code source for blueprint builds');
        clones = c;
      },
    };
    return { blueprints, blueprintCode };
  },
  routes: (app, s) => app.register(blueprintRoutes, { blueprints: s.blueprints.service }),
  // Builds a restart cut run again from here (their jobs retry): the supervisor removed their old sandboxes.
  start: { run: (s) => s.blueprints.runner.markStarted() },
  commands: visibilityCommands({
    plural: 'blueprints',
    one: 'blueprint',
    article: 'a',
    means: 'every account lists it (list_public), sees its metadata and may boot devboxes or build on it',
    setPublic: (store, id, pub) => new SqlBlueprintStore(store.db).setPublic(id, pub),
  }),
};
