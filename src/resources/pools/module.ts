import os from 'node:os';
import type { Module } from '../../host.js';
import { ConfigError, intsOf } from '../../platform/config-error.js';
import { devboxesModule } from '../devboxes/index.js';
import { evictionsModule, memAvailable } from '../evictions/index.js';
import { nodesModule } from '../nodes/index.js';
import { POOL_COMMANDS } from './commands.js';
import { loadPoolConfig, type PoolConfig } from './config.js';
import { POOLS_SCHEMA } from './schema.js';
import { WarmPools } from './warm-pools.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** This node's warm pools: ready boxes a matching create takes (`devboxd pools`). */
    pools: WarmPools;
  }
}

const GiB = 1024 ** 3;

/**
 * Warm pools: boxes booted ahead under no account, per size of the default image or of a public blueprint
 * (DEVBOXD_WARM_POOL for the default size, `devboxd pools set` for any), which a create of the same make takes
 * instead of booting one. They hold room on their
 * node like any box, end first under memory pressure and when the node drains, and are adopted after a
 * restart like any running box.
 */
export const poolsModule: Module<PoolConfig> = {
  name: 'pools',
  needs: [devboxesModule, nodesModule, evictionsModule],
  config: (env) => {
    try {
      return loadPoolConfig(intsOf(env));
    } catch (err) {
      throw new ConfigError((err as Error).message);
    }
  },
  schema: POOLS_SCHEMA,
  build({ host, config, use, log }) {
    const nodes = use('nodes');
    const evictions = use('evictions');
    const pools = new WarmPools({
      devboxes: use('devboxes'),
      lifecycle: use('lifecycle'),
      store: host.store,
      node: host.node,
      config,
      room: async () => (await memAvailable()) >= Math.max(GiB, os.totalmem() / 10),
      draining: () => {
        try {
          nodes.refuseWhileDraining('create');
          evictions.service.refuseWhileDraining('create');
          return false;
        } catch {
          return true;
        }
      },
      log,
    });
    const ext = use('devboxExtensions');
    ext.poolTaker(pools);
    ext.onStopped((id) => pools.stopped(id));
    // Every drain (the node's, `devboxd drain`, SIGTERM with suspend) ends the pooled boxes first; while the
    // node drains (or a local drain refuses creates) no refill starts.
    evictions.beforeDrain(() => pools.drain());
    evictions.relieveFirst(() => pools.relieve());
    return { pools };
  },
  start: { run: (s) => s.pools.start() },
  close: (s) => s.pools.close(),
  commands: POOL_COMMANDS,
};
