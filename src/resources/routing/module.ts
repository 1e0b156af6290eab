import type { Module } from '../../host.js';
import { PeerKey } from '../../platform/http/peers.js';
import { nodesModule } from '../nodes/index.js';
import { ptyModule } from '../pty/index.js';
import { sshModule } from '../ssh/index.js';
import { tunnelsModule } from '../tunnels/index.js';
import { NodeDirectory } from './directory.js';
import { RoutingFront } from './front.js';
import { PeerClient } from './proxy.js';
import { Router } from './router.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** The routing front: requests for another node's boxes go to that node's API server. */
    routing: RoutingFront;
  }
}

/**
 * Routing between the API servers of a cluster: every request that names a box (its API paths, its tunnels'
 * host names, its PTY WebSockets, SSH over TLS by server name) is served by the API server of the box's node,
 * forwarded there by whichever server took it; creates and resumes the node registry places on another node
 * are forwarded there too (ElsewhereError). Built after the tunnels, PTY and SSH fronts, so it sees each
 * request and connection first.
 */
export const routingModule: Module = {
  name: 'routing',
  needs: [nodesModule, tunnelsModule, ptyModule, sshModule],
  build({ host, use, log }) {
    const { config } = host;
    const lifecycle = use('lifecycle');
    const tunnels = use('tunnels').service;
    const pty = use('pty').tunnels;
    const directory = new NodeDirectory(host.store);
    const router = new Router({
      node: host.node,
      active: (id) => lifecycle.active.has(id),
      locate: (id) => host.store.devboxes.locate(id),
      tunnelBox: async (key) => (await tunnels.byKey(key))?.devboxId ?? (await pty.byKey(key))?.devboxId,
      directory,
    });
    const key = config.roles.token ? new PeerKey(config.roles.token, host.node) : undefined;
    const front = new RoutingFront({
      router,
      directory,
      peers: key && { key, client: new PeerClient(key, config.roles.tls.ca) },
      ca: config.roles.tls.ca,
      tunnelDomain: config.tunnelDomain,
      sshDomain: config.ssh.domain ?? config.tunnelDomain,
      log,
    });
    host.fronts.wrap((next) => front.wrap(next));
    host.fronts.upgrade((next) => front.upgrade(next));
    host.fronts.wrapTls((next) => front.tls(next));
    host.fronts.forwardWith(front.forward);
    return { routing: front };
  },
  close: (s) => s.routing.close(),
};
