import type { BootStep, RunningStep, StopListener } from '../devboxes/index.js';
import type { BoxProcessHooks } from '../devboxes/index.js';

/**
 * What the execution side contributes to the devbox lifecycle: launch commands as a boot step, the
 * entrypoint once running, and ending a box's executions when its processes go. The execution service is
 * built after the lifecycle (it needs the devbox service, which needs the lifecycle): reached by a thunk.
 */
export function executionExtensions(executions: () => BoxProcessHooks): { bootStep: BootStep; onRunning: RunningStep; onStopped: StopListener } {
  return {
    bootStep: {
      name: 'launch commands',
      applies: (ctx) => ctx.devbox.sandbox.launch.launchCommands.length > 0,
      async run({ devbox, sandbox }) {
        const failure = await executions().runLaunchCommands(devbox, sandbox);
        if (failure) throw new Error(failure);
      },
    },
    onRunning: (devbox, sandbox, end) => executions().startEntrypoint(devbox, sandbox, end),
    onStopped: (devboxId) => executions().onBoxStopped(devboxId),
  };
}
