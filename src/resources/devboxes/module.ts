import type { Module } from '../../host.js';
import { fileMountsStep } from './boot-steps.js';
import { boxServicesExtensions } from './box-services-link.js';
import { DevboxService } from './devbox-service.js';
import { DevboxExtensionRegistry } from './extension-registry.js';
import { Lifecycle } from './lifecycle.js';
import { devboxRoutes } from './routes/index.js';
import { StatusEvents } from './status-events.js';
import { Supervisor } from './supervisor.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    devboxes: DevboxService;
    lifecycle: Lifecycle;
    events: StatusEvents;
    /** Where other modules extend a box: create resolvers, boot steps, stop listeners, view parts. */
    devboxExtensions: DevboxExtensionRegistry;
    supervisor: Supervisor;
  }
}

/**
 * The devbox core: records, the lifecycle (boot steps, stop listeners), the supervisor that adopts or ends
 * the boxes a previous server ran, and the extension points every feature of a box registers with.
 */
export const devboxesModule: Module = {
  name: 'devboxes',
  build({ host }) {
    const { config, store, runtime, node, logger } = host;
    const ext = new DevboxExtensionRegistry();
    const events = new StatusEvents();
    const lifecycle = new Lifecycle(store.devboxes, runtime, events, logger.child({ component: 'lifecycle' }), ext.lifecycle);
    const devboxes = new DevboxService(
      store,
      lifecycle,
      events,
      logger.child({ component: 'devboxes' }),
      { maxCpuCores: config.maxCpuCores, maxMemoryGiB: config.maxMemoryGiB },
      node,
      ext.service,
    );
    const supervisor = new Supervisor(store.devboxes, runtime, lifecycle, logger.child({ component: 'supervisor' }), node, ext.suspendIdle);
    const link = boxServicesExtensions(() => host.boxServices);
    ext.beforeCreate(link.beforeCreate);
    ext.onStopped(link.onStopped);
    ext.bootStep(fileMountsStep, 'files');
    return { devboxes, lifecycle, events, devboxExtensions: ext, supervisor };
  },
  routes: (app, s) => app.register(devboxRoutes, { devboxes: s.devboxes }),
  start: {
    reconcile: (s) => s.supervisor.reconcile(),
    // Adopted boxes lost their link with the previous server: each gets a fresh one.
    relink: async (s, host) => {
      await Promise.all(
        [...s.lifecycle.active.keys()].map((id) =>
          host.boxServices.link(id).catch((err) => host.logger.error({ err, devbox: id }, 'box services link failed')),
        ),
      );
    },
    run: (s) => s.supervisor.start(),
  },
  close: (s) => s.supervisor.stop(),
};
