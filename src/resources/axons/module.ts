import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { devboxesModule } from '../devboxes/index.js';
import { executionsModule } from '../executions/index.js';
import { snapshotsModule } from '../snapshots/index.js';
import { AXONS_SCHEMA, axonRoutes, type AxonsModule, buildAxons } from './build.js';
import { type AxonConfig, loadAxonConfig } from './config.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Axons: event streams, their SQL databases, the broker mounts that feed them to agents in boxes. */
    axons: AxonsModule;
  }
}

/** Axons: event streams with SQL databases, fed to agents in boxes through broker mounts. */
export const axonsModule: Module<AxonConfig> = {
  name: 'axons',
  needs: [devboxesModule, executionsModule, snapshotsModule],
  config: (env) => loadAxonConfig(intsOf(env)),
  schema: AXONS_SCHEMA,
  build({ host, config, use }) {
    const devboxes = use('devboxes');
    const lifecycle = use('lifecycle');
    const suspend = use('suspend');
    const devboxLog = use('devboxLog');
    const axons = buildAxons({
      store: host.store,
      dataDir: host.config.dataDir,
      config,
      boxLog: (entry) => devboxLog.write(entry),
      devboxes: () => devboxes,
      resume: (accountId, id) => suspend.resume(accountId, id),
      environmentOf: (d) => devboxes.environmentOf(d),
      running: (id, sandbox) => lifecycle.active.get(id)?.sandbox === sandbox,
      log: host.logger.child({ component: 'axons' }),
    });
    const ext = use('devboxExtensions');
    ext.resolver(axons.mounts.resolver);
    ext.onRunning(axons.broker.onRunning);
    ext.onStopped(axons.broker.onStopped);
    return { axons };
  },
  routes: (app, s) => app.register(axonRoutes, { axons: s.axons.service }),
  start: {
    // Adopted boxes' broker mounts: their agents lost the previous server's pipes; each is started again.
    async adopt(s, host) {
      for (const [id, box] of s.lifecycle.active) {
        const d = await host.store.devboxes.getById(id);
        if (d) await s.axons.broker.start(d, box.sandbox).catch((err) => host.logger.error({ err, devbox: id }, 'broker start failed'));
      }
    },
  },
  close: (s) => s.axons.close(),
};
