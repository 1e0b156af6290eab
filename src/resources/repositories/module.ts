import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { blueprintsModule } from '../blueprints/index.js';
import { devboxesModule, resolveLimits } from '../devboxes/index.js';
import { layersModule } from '../layers/index.js';
import { buildRepositories, GIT_PREFIX, INSPECT_JOB, REPOSITORIES_SCHEMA, repositoryRoutes, type RepositoriesModule } from './build.js';
import { loadRepositoryConfig, type RepositoryConfig } from './config.js';
import { REPOSITORIES_SEALED } from './reseal.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Repository connections, their inspections (a job), code mounts and the git relay boxes fetch through. */
    repositories: RepositoriesModule;
  }
}

/** Repository connections, inspections, code mounts and the git relay (served to boxes whatever their policy). */
export const repositoriesModule: Module<RepositoryConfig> = {
  name: 'repositories',
  needs: [devboxesModule, blueprintsModule, layersModule],
  config: (env) => loadRepositoryConfig(env, intsOf(env)),
  schema: REPOSITORIES_SCHEMA,
  sealed: REPOSITORIES_SEALED,
  build({ host, config, use }) {
    const blueprints = use('blueprints');
    const repositories = buildRepositories({
      store: host.store,
      sealer: host.sealer,
      runtime: host.runtime,
      boxServices: () => host.boxServices,
      servicesPort: host.config.boxServicesPort,
      jobs: () => host.jobs,
      config,
      limits: resolveLimits({}, { maxCpuCores: host.config.maxCpuCores, maxMemoryGiB: host.config.maxMemoryGiB }),
      blueprint: (accountId, id) => blueprints.store.get(accountId, id),
      ensureLocal: (layers) => use('layers').ensureLocal(layers),
      outbound: host.outbound,
      log: host.logger.child({ component: 'repositories' }),
    });
    // The git relay answers only a box holding a clone grant (code mounts, inspections), whatever its policy.
    host.boxServices.route(GIT_PREFIX, repositories.relay.handle, { anyPolicy: true });
    // An inspection clones anew in a box of its own: any node can take over one a lost node held.
    host.jobs.register(
      INSPECT_JOB,
      { run: (job) => repositories.runner.run(job.subjectId), exhausted: (job, err) => repositories.runner.exhausted(job.subjectId, err) },
      { anyNode: true },
    );
    use('devboxExtensions').resolver(repositories.codeMounts.resolver);
    use('devboxExtensions').bootStep(repositories.codeMounts.bootStep, 'mounts');
    // Blueprint builds clone their code mounts through this module.
    use('blueprintCode').serve(repositories.buildClones);
    return { repositories };
  },
  routes: (app, s) => app.register(repositoryRoutes, { repositories: s.repositories.service }),
  // Inspections a restart cut run again from here (their jobs retry): the supervisor removed their old sandboxes.
  start: { run: (s) => s.repositories.runner.markStarted() },
  close: (s) => s.repositories.relay.close(),
};
