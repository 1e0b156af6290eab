import type { Sandbox } from '../../runtime/driver.js';
import type { Devbox } from './types.js';

/**
 * What the devbox lifecycle needs from the execution side, implemented by the execution service: launch
 * commands and the entrypoint run as executions (so they are logged and streamed like any other command).
 */
export interface BoxProcessHooks {
  /** Runs the launch commands in order as the devbox user; resolves null on success, else a readable reason. */
  runLaunchCommands(devbox: Devbox, sandbox: Sandbox): Promise<string | null>;
  /** Starts the entrypoint; `onExit` fires once when it ends. */
  startEntrypoint(devbox: Devbox, sandbox: Sandbox, onExit: (exitCode: number | null) => void): void;
  /** The box's processes are gone (shutdown, failure, suspend): running executions end now. */
  onBoxStopped(devboxId: string): void;
}

/** Suspends a devbox (the snapshot side implements it); used by after_idle with on_idle: suspend. */
export type Suspender = (devbox: Devbox) => Promise<void>;
