import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Module } from '../../host.js';
import { INSTALL_ROOT } from '../../lib/install-root.js';
import { ConfigError, intsOf } from '../../platform/config-error.js';
import { devboxesModule } from '../devboxes/index.js';
import { snapshotsModule } from '../snapshots/index.js';
import { hostCapacity } from './capacity.js';
import { NODE_COMMANDS } from './commands.js';
import { loadNodeConfig, type NodeConfig } from './config.js';
import { NodeService } from './node-service.js';
import { NODES_SCHEMA } from './schema.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** The node registry: this node's lease, lost nodes, drains, and where a box may go (`canPlace`, `place`). */
    nodes: NodeService;
  }
}

const VERSION = (JSON.parse(readFileSync(path.join(INSTALL_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The node registry: every server sharing the database registers its node (DEVBOXD_NODE_NAME) with its address
 * and capacity, and keeps a lease on it. A node silent past its lease and grace is declared lost by another
 * server: its boxes fail with a reason naming it, its jobs are taken over or ended. A draining node takes no
 * new box and suspends its own (the evictions module registers how).
 */
export const nodesModule: Module<NodeConfig> = {
  name: 'nodes',
  needs: [devboxesModule, snapshotsModule],
  config: (env) => loadNodeConfig(env, intsOf(env), (message) => new ConfigError(message)),
  schema: NODES_SCHEMA,
  async build({ host, config, use, log }) {
    const nodes = new NodeService({
      store: host.store,
      devboxes: use('devboxes'),
      jobs: host.jobs,
      node: host.node,
      config,
      capacity: hostCapacity(host.config.dataDir, config.capacity),
      version: VERSION,
      log,
    });
    // Registered before the jobs resume and the boxes are adopted: a server declaring this node lost holds its
    // row until the failures are committed, so what follows sees them.
    await nodes.register();
    use('devboxExtensions').resolver(async () => (nodes.refuseWhileDraining('create'), undefined), 'admit');
    use('resumeGuards').add(() => nodes.refuseWhileDraining('resume'));
    return { nodes };
  },
  start: { run: (s) => s.nodes.start() },
  close: (s) => s.nodes.close(),
  commands: NODE_COMMANDS,
};
