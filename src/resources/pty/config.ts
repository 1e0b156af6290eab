import { intSetting } from '../../platform/config-error.js';
import type { Env } from '../../platform/module/index.js';

/** PTY sessions: how long they outlive their clients, how often clients are pinged. Parsed by the module from the environment (its `config`). */
export interface PtyConfig {
  /** DEVBOXD_PTY_IDLE_TTL: seconds a PTY session (its shell) outlives its last client. */
  ptyIdleTtlSeconds: number;
  /** DEVBOXD_PTY_PING_INTERVAL: seconds between pings of an attached PTY client; one unanswered detaches it. */
  ptyPingSeconds: number;
}

export function loadPtyConfig(env: Env): PtyConfig {
  return {
    ptyIdleTtlSeconds: intSetting('DEVBOXD_PTY_IDLE_TTL', env.DEVBOXD_PTY_IDLE_TTL, 600, 1, 7 * 24 * 3600),
    ptyPingSeconds: intSetting('DEVBOXD_PTY_PING_INTERVAL', env.DEVBOXD_PTY_PING_INTERVAL, 30, 1, 3600),
  };
}
