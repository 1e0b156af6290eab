import { parseSize } from '../../platform/config-error.js';

/** Eviction on memory pressure (DEVBOXD_EVICT_ON_MEMORY_PRESSURE=on). */
export interface MemoryPressureConfig {
  /** DEVBOXD_EVICT_MEMORY_PSI_FILE: the pressure file the trigger is written to (host-wide, or a cgroup v2 group's). */
  file: string;
  /** DEVBOXD_EVICT_MEMORY_PSI: the PSI trigger, `some|full <stall µs> <window µs>`. */
  trigger: string;
  /** DEVBOXD_EVICT_MEMORY_AVAILABLE_MIN: evict only while the host's MemAvailable is under this (bytes; 0: on pressure alone). */
  availableMinBytes: number;
  /** DEVBOXD_EVICT_MEMORY_GRACE_SECONDS: time between a pressure eviction's announcement and its suspend. */
  graceMs: number;
}

export interface EvictionConfig {
  /** DEVBOXD_EVICT_ON_SHUTDOWN: `keep` leaves boxes running at SIGTERM (adopted at next start); `suspend` drains them. */
  onShutdown: 'keep' | 'suspend';
  /** DEVBOXD_EVICT_GRACE_SECONDS: time between a drain's announcement and its suspends (`devboxd drain` may say otherwise). */
  graceMs: number;
  /**
   * DEVBOXD_EVICT_SHUTDOWN_TIMEOUT_SECONDS: how long the SIGTERM drain may take; then the server stops anyway and
   * the boxes still running are left to be adopted at the next start (well under systemd's 90 s TimeoutStopSec).
   */
  shutdownTimeoutMs: number;
  /** Null unless DEVBOXD_EVICT_ON_MEMORY_PRESSURE=on. */
  memory: MemoryPressureConfig | null;
}

type Int = (name: string, def: number, min: number, max: number) => number;
type Fail = (message: string) => Error;

export { parseSize };

export function loadEvictionConfig(env: NodeJS.ProcessEnv, int: Int, fail: Fail): EvictionConfig {
  const onShutdown = env.DEVBOXD_EVICT_ON_SHUTDOWN || 'keep';
  if (onShutdown !== 'keep' && onShutdown !== 'suspend') throw fail(`DEVBOXD_EVICT_ON_SHUTDOWN must be keep or suspend, got "${onShutdown}"`);
  const onPressure = env.DEVBOXD_EVICT_ON_MEMORY_PRESSURE || 'off';
  if (onPressure !== 'on' && onPressure !== 'off') throw fail(`DEVBOXD_EVICT_ON_MEMORY_PRESSURE must be on or off, got "${onPressure}"`);
  const trigger = env.DEVBOXD_EVICT_MEMORY_PSI || 'some 300000 2000000';
  const t = /^(some|full) (\d+) (\d+)$/.exec(trigger);
  if (!t || Number(t[2]) <= 0 || Number(t[2]) > Number(t[3])) {
    throw fail(`DEVBOXD_EVICT_MEMORY_PSI must be "some|full <stall µs> <window µs>" with the stall within the window, got "${trigger}"`);
  }
  const rawMin = env.DEVBOXD_EVICT_MEMORY_AVAILABLE_MIN || '10%';
  const availableMinBytes = parseSize(rawMin);
  if (availableMinBytes === undefined)
    throw fail(`DEVBOXD_EVICT_MEMORY_AVAILABLE_MIN must be bytes (512M, 2G) or a percentage of the host's memory (10%), got "${rawMin}"`);
  return {
    onShutdown,
    graceMs: int('DEVBOXD_EVICT_GRACE_SECONDS', 10, 0, 3600) * 1000,
    shutdownTimeoutMs: int('DEVBOXD_EVICT_SHUTDOWN_TIMEOUT_SECONDS', 60, 1, 3600) * 1000,
    memory:
      onPressure === 'on'
        ? {
            file: env.DEVBOXD_EVICT_MEMORY_PSI_FILE || '/proc/pressure/memory',
            trigger,
            availableMinBytes,
            graceMs: int('DEVBOXD_EVICT_MEMORY_GRACE_SECONDS', 5, 0, 3600) * 1000,
          }
        : null,
  };
}
