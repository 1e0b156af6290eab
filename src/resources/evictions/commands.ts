import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { UsageError } from '../../platform/module/index.js';
import { drainNode } from '../nodes/index.js';
import { runDrain } from './drain-socket.js';

const USAGE = 'usage: devboxd drain [NODE] [--grace-seconds N] [--wait-seconds N]';

/** An option's whole number of seconds in [0, max], or a usage error naming it. */
function seconds(raw: string | undefined, name: string, max: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw new UsageError(`devboxd drain: --${name} must be an integer between 0 and ${max}`, USAGE);
  return Number(raw);
}

/**
 * `devboxd drain`: asks the server on this data dir (its control socket) to suspend every box it runs.
 * `devboxd drain NODE`: marks a node of the shared database draining; the server that owns it drains.
 */
export const EVICTION_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['drain'],
    args: ['[NODE]'],
    options: {
      'grace-seconds': { type: 'string', placeholder: 'N', help: 'notice before each suspend, 0 to 3600 (default DEVBOXD_EVICT_GRACE_SECONDS); without NODE' },
      'wait-seconds': { type: 'string', placeholder: 'N', help: "how long to wait for NODE's devboxes to be suspended, 0 to 86400 (default 600); with NODE" },
    },
    summary: `suspend every devbox the server on this data dir runs (disks kept, so owners can resume them): each
is announced on the eviction watch stream the grace before its suspend; exits 0 once all are suspended.
With NODE (a server sharing the database, see devboxd nodes): NODE takes no new devbox and its server
suspends its devboxes the same way (devboxd undrain NODE lets it take devboxes again)`,
    run: async ({ config, io, withStore }, { NODE }, o) => {
      const grace = seconds(o['grace-seconds'] as string | undefined, 'grace-seconds', 3600);
      const wait = seconds(o['wait-seconds'] as string | undefined, 'wait-seconds', 86_400);
      if (NODE === undefined) {
        if (wait !== undefined) throw new UsageError('devboxd drain: --wait-seconds goes with NODE', USAGE);
        return runDrain(config.dataDir, grace, (line) => io.out(`${line}\n`));
      }
      // The node's own server drains with its own notice: DEVBOXD_EVICT_GRACE_SECONDS there.
      if (grace !== undefined) throw new UsageError("devboxd drain NODE: --grace-seconds is the node's DEVBOXD_EVICT_GRACE_SECONDS", USAGE);
      return withStore((store) => drainNode(store, io, NODE, wait ?? 600));
    },
  },
];
