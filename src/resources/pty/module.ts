import type { Module } from '../../host.js';
import { devboxesModule } from '../devboxes/index.js';
import { loadPtyConfig, type PtyConfig } from './config.js';
import { ptyStopListener } from './devbox-extensions.js';
import { PtySessions } from './pty-sessions.js';
import { PtyTunnels } from './pty-tunnels.js';
import { ptyRoutes } from './routes/index.js';
import { PtyFront } from './routes/pty-front.js';
import { PTY_SCHEMA } from './schema.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** PTY tunnels (create_pty_tunnel), the terminal sessions, and their endpoints on the tunnel host names. */
    pty: { tunnels: PtyTunnels; sessions: PtySessions; front: PtyFront };
  }
}

/** Terminals in a box over WebSockets, reached on tunnel host names with a PTY tunnel's token. */
export const ptyModule: Module<PtyConfig> = {
  name: 'pty',
  needs: [devboxesModule],
  config: loadPtyConfig,
  schema: PTY_SCHEMA,
  build({ host, config, use }) {
    const devboxes = use('devboxes');
    const log = host.logger.child({ component: 'pty' });
    const tunnels = new PtyTunnels(host.store, () => devboxes);
    const sessions = new PtySessions(use('lifecycle'), () => devboxes, config.ptyIdleTtlSeconds * 1000, log);
    const front = new PtyFront({
      tunnels,
      sessions,
      devboxById: (id) => host.store.devboxes.getById(id),
      domain: host.config.tunnelDomain,
      pingMs: config.ptyPingSeconds * 1000,
      log,
    });
    // PTY tunnels' host names ahead of the tunnels' (this module is built after them).
    host.fronts.wrap((next) => front.wrap(next));
    host.fronts.upgrade((next) => front.upgrade(next));
    use('devboxExtensions').onStopped(
      ptyStopListener(
        () => sessions,
        () => tunnels,
        log,
      ),
    );
    return { pty: { tunnels, sessions, front } };
  },
  routes: (app, s) => app.register(ptyRoutes, { ptyTunnels: s.pty.tunnels }),
};
