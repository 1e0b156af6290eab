import { parseSize } from '../../platform/config-error.js';
import type { Capacity } from './types.js';

/** The registry's settings (the nodes module's `config`, parsed once at start). */
export interface NodeConfig {
  /**
   * DEVBOXD_NODE_URL: where API servers reach this node's agent: `unix:/path` on one host, an http:// (token
   * only) or https:// (TLS) URL between hosts; unset, none is advertised.
   */
  url: string | null;
  /** DEVBOXD_NODE_LEASE_SECONDS: how long a renewal holds; renewed every third of it. */
  leaseMs: number;
  /** DEVBOXD_NODE_GRACE_SECONDS: how long past its lease a silent node gets before it is declared lost. */
  graceMs: number;
  /**
   * DEVBOXD_NODE_CPU_CORES, DEVBOXD_NODE_MEMORY, DEVBOXD_NODE_DISK: what this node offers boxes; each unset
   * one is read from the host (the server's cgroup and cores, its memory, the data dir's filesystem).
   */
  capacity: Partial<Capacity>;
}

type Int = (name: string, def: number, min: number, max: number) => number;
type Fail = (message: string) => Error;

const MAX_BYTES = 2 ** 60;

export function loadNodeConfig(env: Readonly<Record<string, string | undefined>>, int: Int, fail: Fail): NodeConfig {
  const url = env.DEVBOXD_NODE_URL || null;
  if (url !== null && !/^unix:\/[^\0]{1,100}$/.test(url)) {
    let ok = false;
    try {
      const u = new URL(url);
      ok = (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && !u.search && !u.hash;
    } catch {}
    if (!ok) throw fail(`DEVBOXD_NODE_URL must be unix:/absolute/path, or an http:// or https:// URL without credentials, query or fragment, got "${url}"`);
  }
  const capacity: Partial<Capacity> = {};
  const cpu = env.DEVBOXD_NODE_CPU_CORES;
  if (cpu) {
    const n = Number(cpu);
    if (!/^\d+(\.\d+)?$/.test(cpu) || n <= 0 || n > 65536)
      throw fail(`DEVBOXD_NODE_CPU_CORES must be a number of cores above 0 (e.g. 16 or 7.5), got "${cpu}"`);
    capacity.cpuCores = n;
  }
  for (const [name, key] of [
    ['DEVBOXD_NODE_MEMORY', 'memoryBytes'],
    ['DEVBOXD_NODE_DISK', 'diskBytes'],
  ] as const) {
    const raw = env[name];
    if (!raw) continue;
    const bytes = /%$/.test(raw) ? undefined : parseSize(raw);
    if (bytes === undefined || bytes <= 0 || bytes > MAX_BYTES) throw fail(`${name} must be a size in bytes (e.g. 68719476736, 64G, 2T), got "${raw}"`);
    capacity[key] = bytes;
  }
  return {
    url,
    leaseMs: int('DEVBOXD_NODE_LEASE_SECONDS', 15, 1, 3600) * 1000,
    graceMs: int('DEVBOXD_NODE_GRACE_SECONDS', 30, 0, 86_400) * 1000,
    capacity,
  };
}
