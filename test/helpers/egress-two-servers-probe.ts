/**
 * Run by test/unit/egress-floor.test.ts in a network namespace of its own: two nodes (servers) of one host
 * share the table, on a host that still has an older devboxd's table. The second one starting with another
 * deny list and other bounds must not change the first one's boxes' floor or bounds, and a restart of either
 * (the second with other bounds) rewrites its own chains alone. Prints what the table held at each step as
 * one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { Egress } from '../../src/runtime/linux/egress.js';
import { nodeChains } from '../../src/runtime/linux/egress-node.js';
import type { EgressConfig } from '../../src/runtime/linux/egress-table.js';

const log = { warn: console.error, info: () => undefined, error: console.error, debug: () => undefined } as never;
const nft = (...args: string[]) =>
  execFileSync('nft', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    .toString()
    .replace(/\s+/g, ' ');
const list = (kind: 'set' | 'map' | 'chain', name: string) => nft('list', kind, 'inet', 'devboxd', name);
const sets = () => [...nft('list', 'sets', 'inet').matchAll(/ set (\S+) \{/g)].map((m) => m[1]!);

// An older devboxd's table: one shared chain holding the bounds, `known` boxes, one of them an element.
execFileSync('nft', ['-f', '-'], {
  input: `table inet devboxd {
  set known { type ifname; elements = { "dbxold" } }
  set never_box { type ifname . ipv4_addr; flags interval; }
  chain forward { type filter hook forward priority -5; policy accept; iifname "dbx*" iifname != @known reject; }
}`,
});

const a: EgressConfig = {
  node: 'node-a',
  subnet: '10.88.0.0/16',
  deny: ['198.51.100.7/32'],
  openInterfaces: [],
  bandwidthBytes: 1_000_000,
  maxConnections: 24,
};
const b: EgressConfig = { node: 'node.b', subnet: '10.90.0.0/16', deny: [], openInterfaces: [], bandwidthBytes: 2_000_000, maxConnections: 40 };
const chainsOf = (cfg: EgressConfig) => {
  const n = nodeChains(cfg);
  return list('chain', n.chain) + list('chain', n.out);
};

const strict = new Egress(a, log);
await strict.prepare();
const upgraded = {
  sets: sets(),
  known: (() => {
    try {
      return list('set', 'known');
    } catch {
      return null;
    }
  })(),
};
strict.link('box1', 1);
await strict.apply('box1', { allowAll: true, cidrs: [] });
const loose = new Egress(b, log);
await loose.prepare();
loose.link('box2', 2);
await loose.apply('box2', { allowAll: true, cidrs: [] });
const both = { a: chainsOf(a), b: chainsOf(b), nodes: list('map', 'nodes'), neverBox: list('set', 'never_box'), never4: list('set', 'never4') };
loose.close();

// The second node restarts with another connection bound, and adopts its box.
const b2 = { ...b, maxConnections: 56 };
const again = new Egress(b2, log);
await again.prepare();
await again.apply('box2', { allowAll: true, cidrs: [] });
const afterB = { a: chainsOf(a), b: chainsOf(b2), nodes: list('map', 'nodes'), sets: sets() };
again.close();

// The first one restarts with the same bounds.
strict.close();
const first = new Egress(a, log);
await first.prepare();
const afterA = { a: chainsOf(a), b: chainsOf(b2), sets: sets() };
first.close();

console.log(JSON.stringify({ upgraded, both, afterB, afterA, names: { a: nodeChains(a), b: nodeChains(b), b2: nodeChains(b2) } }));
