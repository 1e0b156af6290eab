import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Module } from '../../host.js';
import { INSTALL_ROOT } from '../../lib/install-root.js';
import { ConfigError, intsOf } from '../../platform/config-error.js';
import { ElsewhereError } from '../../platform/http/peers.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import { devboxesModule } from '../devboxes/index.js';
import { snapshotsModule } from '../snapshots/index.js';
import { hostCapacity } from './capacity.js';
import { NODE_COMMANDS } from './commands.js';
import { apiUrlOf, loadNodeConfig, type NodeConfig } from './config.js';
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
      apiUrl: apiUrlOf(config.apiUrl, host.config.host, host.config.port),
      capacity: hostCapacity(host.config.dataDir, config.capacity),
      version: VERSION,
      log,
    });
    // Registered before the jobs resume and the boxes are adopted: a server declaring this node lost holds its
    // row until the failures are committed, so what follows sees them.
    await nodes.register();
    // A tenant's create goes to the node `placeBox` picks (forwarded there when it is another); a draining
    // node takes none. A box standing on layers this node holds (a snapshot's, a blueprint's) stays here when
    // it can: it boots without fetching them from the blob store.
    use('devboxExtensions').placer(async (box, placing) => {
      if (!placing) return nodes.refuseWhileDraining('create');
      const prefer = box.layers.length && (await holdsAll(host.runtime, box.layers)) ? host.node : undefined;
      const to = await nodes.placeBox(box.size, 'create', prefer);
      if (to !== host.node) throw new ElsewhereError(to);
    });
    // A box resumes on its own node when that can take it, else on another (SuspendService.resume moves it).
    use('resumeGuards').add(async (d, placing) => {
      if (!placing) return nodes.refuseWhileDraining('resume');
      const to = await nodes.placeBox(d.sandbox.limits, 'resume', d.node || host.node);
      if (to !== host.node) throw new ElsewhereError(to);
    });
    return { nodes };
  },
  start: { run: (s) => s.nodes.start() },
  close: (s) => s.nodes.close(),
  commands: NODE_COMMANDS,
};

async function holdsAll(runtime: RuntimeDriver, layers: readonly string[]): Promise<boolean> {
  for (const layer of layers) if (!(await runtime.layerExists(layer).catch(() => false))) return false;
  return true;
}
