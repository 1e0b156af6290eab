/**
 * What no box reaches whatever its policy (the `never4` set), beside DEVBOXD_EGRESS_DENY: the built-in ranges
 * and the host's own addresses and networks, read from its interfaces.
 */
import { networkInterfaces } from 'node:os';

export const ip4 = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
export const parse4 = (s: string): number => s.split('.').reduce((a, o) => a * 256 + Number(o), 0);

/**
 * What the floor always holds, beside the host's own addresses and networks and the box subnet: this host,
 * link-local and cloud metadata (169.254/16; 100.64/10 holds Alibaba's and tailnets; 168.63.129.16 is
 * Azure's WireServer), IETF protocol assignments, multicast and broadcast.
 */
export const FLOOR = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '100.64.0.0/10', '168.63.129.16/32', '192.0.0.0/24', '224.0.0.0/3'];

/**
 * The host's own IPv4 addresses, and the networks of all its interfaces but the open ones: a second NIC's
 * LAN, a VPN, a container bridge are as unreachable as the uplink's network.
 */
export function hostNetworks(open: Set<string>): string[] {
  const out: string[] = [];
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    // Box links: their addresses are in the box subnet, which the floor holds whole.
    if (name.startsWith('dbx')) continue;
    for (const a of addrs ?? []) {
      if (a.family !== 'IPv4') continue;
      out.push(`${a.address}/32`);
      if (!open.has(name) && a.cidr) {
        const [addr, len] = a.cidr.split('/');
        const prefix = Number(len);
        const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
        out.push(`${ip4((parse4(addr!) & mask) >>> 0)}/${prefix}`);
      }
    }
  }
  return out.sort();
}
