/**
 * The parts of a policy that need checking beyond their JSON shape: host name patterns (matched by
 * platform/net's hostMatcher, in the boxes' DNS) and IPv4 CIDRs with port rules.
 */
import { isIP } from 'node:net';
import { ERRORS } from '../../platform/errors.js';
import type { AllowedCidr, PortRule } from './types.js';

export const MAX_HOSTNAMES = 1000;
export const MAX_CIDRS = 256;
const LABEL = /^(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$/;

/**
 * A host name pattern: an exact name, or `*.` then a name, which stands for every name under it at any depth
 * (`*.npmjs.org` is registry.npmjs.org and a.b.npmjs.org, not npmjs.org). `*` is refused anywhere else:
 * matching stays a set lookup per suffix of the asked name, never a pattern search. Kept lower case.
 */
export function checkHostnames(list: string[], field: string): string[] {
  if (list.length > MAX_HOSTNAMES) throw ERRORS.invalid(`${field}: at most ${MAX_HOSTNAMES} host names`);
  return list.map((raw, i) => {
    const h = raw.trim().toLowerCase().replace(/\.$/, '');
    const labels = h.split('.');
    const bad = (why: string) => ERRORS.invalid(`${field}[${i}]: "${raw}" ${why}`);
    if (h.length === 0 || h.length > 253 || labels.some((l) => !LABEL.test(l))) throw bad('is not a host name or a pattern like *.example.com');
    if (labels.slice(1).includes('*')) throw bad('has a * that is not the whole first label (only *.example.com is a pattern)');
    if (labels[0] === '*' && labels.length < 2) throw bad('is a bare wildcard (write *.example.com)');
    return h;
  });
}

/** Canonical IPv4 CIDRs (host bits zero) with valid port rules. */
export function checkCidrs(list: AllowedCidr[], field: string): AllowedCidr[] {
  if (list.length > MAX_CIDRS) throw ERRORS.invalid(`${field}: at most ${MAX_CIDRS} entries`);
  return list.map((c, i) => {
    const f = `${field}[${i}]`;
    const [addr, len] = c.cidr.split('/');
    const prefix = Number(len);
    if (isIP(addr ?? '') !== 4 || !/^\d{1,2}$/.test(len ?? '') || prefix > 32 || !/^(\d{1,3}\.){3}\d{1,3}$/.test(addr!)) {
      throw ERRORS.invalid(`${f}.cidr: "${c.cidr}" is not an IPv4 CIDR like 10.12.0.0/16`);
    }
    const n = addr!.split('.').reduce((a, o) => a * 256 + Number(o), 0);
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    if ((n & mask) >>> 0 !== n) throw ERRORS.invalid(`${f}.cidr: "${c.cidr}" has host bits set (canonical form has them zero)`);
    return { cidr: c.cidr, ports: c.ports.map((p, j) => checkPort(p, `${f}.ports[${j}]`)) };
  });
}

function checkPort(p: PortRule, field: string): PortRule {
  if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) throw ERRORS.invalid(`${field}.port must be between 1 and 65535`);
  if (p.endPort !== null && (!Number.isInteger(p.endPort) || p.endPort < p.port || p.endPort > 65535)) {
    throw ERRORS.invalid(`${field}.end_port must be between port and 65535`);
  }
  return p;
}
