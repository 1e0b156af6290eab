import type { Module } from '../../host.js';
import { devboxesModule } from '../devboxes/index.js';
import { TUNNEL_PREFIX } from '../network-policies/index.js';
import { snapshotsModule } from '../snapshots/index.js';
import { tunnelRoutes } from './routes/index.js';
import { TunnelFront } from './routes/tunnel-front.js';
import { TUNNELS_SCHEMA } from './schema.js';
import { TunnelService } from './tunnel-service.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Tunnels: enable/remove and the view (service); the traffic on the main port, ahead of the API (front). */
    tunnels: { service: TunnelService; front: TunnelFront };
  }
}

/** How long a request to a suspended box with wake_on_http waits for it to run before a 503. */
export const WAKE_TIMEOUT_MS = 60_000;

/** Tunnels to a box's ports: by host name or /tunnel/ path on the API port, and from boxes of the same account. */
export const tunnelsModule: Module = {
  name: 'tunnels',
  needs: [devboxesModule, snapshotsModule],
  schema: TUNNELS_SCHEMA,
  build({ host, use }) {
    const devboxes = use('devboxes');
    const suspend = use('suspend');
    const service = new TunnelService(host.store, host.sealer, () => devboxes);
    const front = new TunnelFront({
      tunnels: service,
      devboxes,
      lifecycle: use('lifecycle'),
      devboxById: (id) => host.store.devboxes.getById(id),
      resume: (accountId, id) => suspend.resume(accountId, id),
      address: async (id) => (await host.runtime.network(id))?.boxAddress ?? null,
      domain: host.config.tunnelDomain,
      wakeTimeoutMs: WAKE_TIMEOUT_MS,
      log: host.logger.child({ component: 'tunnels' }),
    });
    // Boxes whose policy allows devbox-to-devbox traffic reach their account's tunnels through the box services.
    host.boxServices.route(TUNNEL_PREFIX, front.fromBox);
    // Tunnel traffic (by host name or /tunnel/ path) is served ahead of the API, streamed to the box.
    host.fronts.wrap((next) => front.wrap(next));
    host.fronts.upgrade(() => front.upgrade);
    use('devboxExtensions').resolver(service.resolver);
    use('devboxExtensions').enricher(service.enricher);
    return { tunnels: { service, front } };
  },
  routes: (app, s) => app.register(tunnelRoutes, { tunnels: s.tunnels.service }),
  close: (s) => s.tunnels.front.close(),
};
