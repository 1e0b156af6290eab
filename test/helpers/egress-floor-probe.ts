/**
 * Run by test/unit/egress-floor.test.ts in a network namespace of its own: the floor the real Egress writes —
 * host-wide (`never4`) at start, and a box's own (`never_box`) at its boot after the host gained interfaces.
 * Prints the sets' elements as one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { Egress } from '../../src/runtime/linux/egress.js';

const log = { warn: console.error, info: () => undefined, error: console.error, debug: () => undefined } as never;
// 198.18.200.0/22 starts where lan2's network does (the kernel keeps out an element that meets one already in
// the set); 192.168.0.0/16 is the private range the operator opened.
const e = new Egress(
  {
    node: 'probe',
    subnet: '10.88.0.0/16',
    deny: ['198.18.200.0/22'],
    openInterfaces: ['open0'],
    privateAllow: ['192.168.0.0/16'],
    bandwidthBytes: 1e8,
    maxConnections: 1024,
  },
  log,
);
const list = (set: string) => execFileSync('nft', ['list', 'set', 'inet', 'devboxd', set]).toString().replace(/\s+/g, ' ');
const never = () => list('never4');
const ip = (...args: string[]) => execFileSync('ip', args);
/** A veth pair with both ends up: only a running interface has addresses the host routes by. */
const link = (name: string, ...cidrs: string[]) => {
  ip('link', 'add', name, 'type', 'veth', 'peer', 'name', `${name}p`);
  for (const c of cidrs) ip('addr', 'add', c, 'dev', name);
  ip('link', 'set', name, 'up');
  ip('link', 'set', `${name}p`, 'up');
};
link('up0', '192.0.2.1/30');
await e.prepare();
const atStart = never();
// A second NIC after start: a private LAN and one in public space; and an interface the operator opened.
link('lan1', '192.168.77.1/24', '198.51.100.1/24');
link('open0', '203.0.113.1/24');
link('lan2', '198.18.200.1/24');
// A veth carries (and lists its addresses) once both ends came up.
for (let i = 0; i < 50 && !(networkInterfaces().open0 && networkInterfaces().lan1 && networkInterfaces().lan2); i++)
  await new Promise((r) => setTimeout(r, 50));
e.link('box1', 1);
await e.apply('box1', { allowAll: true, cidrs: [] });
const afterBoot = list('never_box');
// A policy update of the running box after the host gained a network: the floor is written anew, and the
// policy's openings (withdrawn meanwhile) are back.
link('lan3', '198.18.210.1/24');
for (let i = 0; i < 50 && !networkInterfaces().lan3; i++) await new Promise((r) => setTimeout(r, 50));
await e.apply('box1', { allowAll: false, cidrs: [{ cidr: '198.51.0.0/16', ports: [] }] });
const afterUpdate = { never: list('never_box'), cidrs: list('cidr_any'), all: list('all_out') };
e.close();
console.log(JSON.stringify({ atStart, afterBoot, afterUpdate }));
