import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError } from './platform/config-error.js';
import { outsidePrivate, PRIVATE_RANGES } from './platform/net/index.js';
import type { EgressConfig } from './runtime/index.js';

/** Box networking settings (part of Config, parsed once at start). */
export interface NetworkConfig {
  /** DEVBOXD_NETWORK: `on` gives every box a network link under its policy; `off` leaves boxes a loopback only. */
  enabled: boolean;
  /** DEVBOXD_BOX_SUBNET: IPv4 network (/16 or larger) each box's /31 link is carved from. */
  boxSubnet: string;
  /** DEVBOXD_EGRESS_DENY: comma-separated CIDRs no box reaches whatever its policy (beside the built-in floor). */
  egressDeny: string[];
  /**
   * DEVBOXD_EGRESS_OPEN_INTERFACES: comma-separated host interfaces whose networks a policy may open (the
   * networks of every other host interface are in the floor). Empty by default.
   */
  egressOpenInterfaces: string[];
  /**
   * DEVBOXD_EGRESS_PRIVATE_ALLOW: comma-separated CIDRs inside the private ranges that a policy's CIDR may open
   * (every other private address is in the floor). Empty by default.
   */
  egressPrivateAllow: string[];
  /** DEVBOXD_DEFAULT_EGRESS: what a box without a network policy reaches: `allow` (the public internet) or `deny`. */
  defaultEgress: 'allow' | 'deny';
  /** DEVBOXD_DNS_UPSTREAM: `address[:port]` the boxes' DNS (in the runtime) asks; default the host's first nameserver. */
  dnsUpstream: { address: string; port: number };
  /** DEVBOXD_BOX_BANDWIDTH_MBIT: megabits per second a box may send, and receive. */
  boxBandwidthMbit: number;
  /** DEVBOXD_BOX_MAX_CONNECTIONS: connections a box holds open at once. */
  boxMaxConnections: number;
  /** DEVBOXD_MIRRORS: comma-separated host names (`*.` wildcards) a policy with allow_runloop_mirrors reaches. */
  mirrors: string[];
}

const CIDR = /^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/;

function cidrs(name: string, raw: string): string[] {
  const list = raw
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  for (const c of list) {
    const bare = c.includes('/') ? c : `${c}/32`;
    if (!CIDR.test(bare) || isIP(bare.split('/')[0]!) !== 4 || Number(bare.split('/')[1]) > 32) {
      throw new ConfigError(`${name} must be comma-separated IPv4 CIDRs, got "${c}"`);
    }
  }
  return list.map((c) => (c.includes('/') ? c : `${c}/32`));
}

function hostNameserver(): string {
  try {
    const m = /^\s*nameserver\s+(\S+)/m.exec(readFileSync('/etc/resolv.conf', 'utf8'));
    if (m && isIP(m[1]!) === 4) return m[1]!;
  } catch {
    /* no resolver configured */
  }
  return '127.0.0.1';
}

export function loadNetworkConfig(env: NodeJS.ProcessEnv, int: (name: string, def: number, min: number, max: number) => number): NetworkConfig {
  const enabled = (env.DEVBOXD_NETWORK || 'on') === 'on';
  if (!['on', 'off', '', undefined].includes(env.DEVBOXD_NETWORK)) throw new ConfigError(`DEVBOXD_NETWORK must be on or off, got "${env.DEVBOXD_NETWORK}"`);
  const boxSubnet = env.DEVBOXD_BOX_SUBNET || '10.88.0.0/16';
  if (!CIDR.test(boxSubnet) || Number(boxSubnet.split('/')[1]) > 16) {
    throw new ConfigError(`DEVBOXD_BOX_SUBNET must be an IPv4 network of /16 or larger, got "${boxSubnet}"`);
  }
  const defaultEgress = env.DEVBOXD_DEFAULT_EGRESS || 'allow';
  if (defaultEgress !== 'allow' && defaultEgress !== 'deny') throw new ConfigError(`DEVBOXD_DEFAULT_EGRESS must be allow or deny, got "${defaultEgress}"`);
  const upstream = env.DEVBOXD_DNS_UPSTREAM || hostNameserver();
  const [address, port] = upstream.split(':');
  if (isIP(address ?? '') !== 4 || (port !== undefined && !/^\d{1,5}$/.test(port))) {
    throw new ConfigError(`DEVBOXD_DNS_UPSTREAM must be an IPv4 address with an optional :port, got "${upstream}"`);
  }
  const privateAllow = cidrs('DEVBOXD_EGRESS_PRIVATE_ALLOW', env.DEVBOXD_EGRESS_PRIVATE_ALLOW ?? '');
  for (const c of privateAllow) {
    // What lies outside them is public (a policy opens it alone) or in the floor (nothing opens it).
    if (outsidePrivate([c]).length > 0) {
      throw new ConfigError(`DEVBOXD_EGRESS_PRIVATE_ALLOW: ${c} is not inside a private range (${PRIVATE_RANGES.join(', ')})`);
    }
  }
  const mirrors = (env.DEVBOXD_MIRRORS ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  return {
    enabled,
    boxSubnet,
    egressDeny: cidrs('DEVBOXD_EGRESS_DENY', env.DEVBOXD_EGRESS_DENY ?? '169.254.0.0/16,100.64.0.0/10'),
    egressOpenInterfaces: (env.DEVBOXD_EGRESS_OPEN_INTERFACES ?? '')
      .split(',')
      .map((i) => i.trim())
      .filter(Boolean),
    egressPrivateAllow: privateAllow,
    defaultEgress,
    dnsUpstream: { address: address!, port: port ? Number(port) : 53 },
    boxBandwidthMbit: int('DEVBOXD_BOX_BANDWIDTH_MBIT', 1000, 1, 1_000_000),
    boxMaxConnections: int('DEVBOXD_BOX_MAX_CONNECTIONS', 1024, 16, 1_000_000),
    mirrors,
  };
}

/**
 * The runtime driver's egress settings from the network config (bandwidth in bytes per second), its boxes' DNS
 * included, for the node `node` (DEVBOXD_NODE_NAME): its bounds hold its own boxes, whatever other nodes of the
 * host set.
 */
export function egressSettings(n: NetworkConfig, node: string): EgressConfig {
  return {
    node,
    subnet: n.boxSubnet,
    deny: n.egressDeny,
    openInterfaces: n.egressOpenInterfaces,
    privateAllow: n.egressPrivateAllow,
    bandwidthBytes: n.boxBandwidthMbit * 125_000,
    maxConnections: n.boxMaxConnections,
    dnsUpstream: n.dnsUpstream,
  };
}
