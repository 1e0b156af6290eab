import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { UsageError } from '../../platform/module/index.js';
import { runDrain } from './drain-socket.js';

/** `devboxd drain`: asks the server on this data dir (its control socket) to suspend every box it runs. */
export const EVICTION_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['drain'],
    args: [],
    options: { 'grace-seconds': { type: 'string', placeholder: 'N', help: 'notice before each suspend, 0 to 3600 (default DEVBOXD_EVICT_GRACE_SECONDS)' } },
    summary: `suspend every devbox the server on this data dir runs (disks kept, so owners can resume them): each
is announced on the eviction watch stream the grace before its suspend; exits 0 once all are suspended`,
    run: async ({ config, io }, _args, o) => {
      const raw = o['grace-seconds'] as string | undefined;
      const grace = raw === undefined ? undefined : Number(raw);
      if (grace !== undefined && (!/^\d+$/.test(raw!) || grace > 3600)) {
        throw new UsageError('devboxd drain: --grace-seconds must be an integer between 0 and 3600', 'usage: devboxd drain [--grace-seconds N]');
      }
      return runDrain(config.dataDir, grace, (line) => io.out(`${line}\n`));
    },
  },
];
