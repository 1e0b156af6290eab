import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseSize } from '../../platform/config-error.js';
import type { Capacity } from './types.js';

/** The registry's settings (the nodes module's `config`, parsed once at start). */
export interface NodeConfig {
  /**
   * DEVBOXD_NODE_URL: where API servers reach this node's agent: `unix:/path` on one host, an http:// (token
   * only) or https:// (TLS) URL between hosts; unset, none is advertised.
   */
  url: string | null;
  /**
   * DEVBOXD_API_URL: where other API servers reach this one, to forward requests for this node's boxes and
   * the creates placed on it (http:// or https://, no path). Unset: derived from DEVBOXD_HOST and DEVBOXD_PORT
   * when another host can reach those (`apiUrlOf`), else none (no box is placed on or forwarded to this node).
   */
  apiUrl: string | null | undefined;
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
  const apiUrl = env.DEVBOXD_API_URL ? parseApiUrl(env.DEVBOXD_API_URL, fail) : undefined;
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
    apiUrl,
    leaseMs: int('DEVBOXD_NODE_LEASE_SECONDS', 15, 1, 3600) * 1000,
    graceMs: int('DEVBOXD_NODE_GRACE_SECONDS', 30, 0, 86_400) * 1000,
    capacity,
  };
}

function parseApiUrl(raw: string, fail: Fail): string {
  try {
    const u = new URL(raw);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && !u.search && !u.hash && u.pathname === '/') return u.origin;
  } catch {}
  throw fail(`DEVBOXD_API_URL must be an http:// or https:// URL of this API server without path, credentials, query or fragment, got "${raw}"`);
}

/**
 * The API URL other servers use: the one set, else `http://DEVBOXD_HOST:DEVBOXD_PORT` when that is an address
 * another host reaches (not a wildcard, loopback or link-local address, nor `localhost`, nor port 0), else none.
 */
export function apiUrlOf(set: string | null | undefined, host: string, port: number): string | null {
  if (set !== undefined) return set;
  if (port === 0 || !host || host === 'localhost') return null;
  if (!net.isIP(host)) return `http://${host}:${port}`;
  const range = ipaddr.process(host).range();
  if (range === 'unspecified' || range === 'loopback' || range === 'linkLocal') return null;
  return `http://${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
}
