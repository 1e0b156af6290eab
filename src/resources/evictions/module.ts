import type { Module } from '../../host.js';
import { ConfigError, intsOf } from '../../platform/config-error.js';
import { devboxesModule } from '../devboxes/index.js';
import { nodesModule } from '../nodes/index.js';
import { snapshotsModule } from '../snapshots/index.js';
import { buildEvictions, EVICTIONS_SCHEMA, evictionRoutes, type EvictionModule } from './build.js';
import { EVICTION_COMMANDS } from './commands.js';
import { type EvictionConfig, loadEvictionConfig } from './eviction-config.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Evictions: the watch stream's source, drains (`devboxd drain`, SIGTERM with DEVBOXD_EVICT_ON_SHUTDOWN=suspend), memory pressure. */
    evictions: EvictionModule;
    evictionConfig: EvictionConfig;
  }
}

/** Evictions: drains (SIGTERM, `devboxd drain`) and memory pressure suspend boxes, announced on a watch stream first. */
export const evictionsModule: Module<EvictionConfig> = {
  name: 'evictions',
  needs: [devboxesModule, snapshotsModule, nodesModule],
  config: (env) => loadEvictionConfig(env, intsOf(env), (message) => new ConfigError(message)),
  schema: EVICTIONS_SCHEMA,
  build({ host, config, use }) {
    const suspend = use('suspend');
    const snapshots = use('snapshots');
    const evictions = buildEvictions({
      store: host.store,
      lifecycle: use('lifecycle'),
      events: use('events'),
      suspend: (d) => suspend.suspendIdle(d),
      snapshotting: async (id) => Boolean(await snapshots.inProgressFor(id)),
      node: host.node,
      config,
      log: host.logger.child({ component: 'evictions' }),
    });
    // A draining server takes no create (before anything is resolved) and no resume.
    use('devboxExtensions').resolver(async () => (evictions.service.refuseWhileDraining('create'), undefined), 'admit');
    use('resumeGuards').add(() => evictions.service.refuseWhileDraining('resume'));
    use('devboxExtensions').onStopped((id) => evictions.service.stopped(id));
    // `devboxd drain NODE` marks the node draining in the registry; its server drains as `devboxd drain` does.
    use('nodes').onDraining(() => evictions.service.drain('drain', config.graceMs));
    return { evictions, evictionConfig: config };
  },
  routes: (app, s) => app.register(evictionRoutes, { evictions: s.evictions.service }),
  start: { run: (s) => s.evictions.start() },
  close: (s) => s.evictions.close(),
  commands: EVICTION_COMMANDS,
};
