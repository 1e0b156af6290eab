/**
 * Run by test/unit/egress-chains.test.ts in a network namespace of its own: boxes' own chains (overlapping
 * port rules) across a restart of the server (a new Egress). Prints the table's c_* chains at each step.
 */
import { execFileSync } from 'node:child_process';
import { Egress } from '../../src/runtime/linux/egress.js';

const log = { warn: console.error, info: () => undefined, error: console.error, debug: () => undefined } as never;
const cfg = { node: 'probe', subnet: '10.88.0.0/16', deny: [], bandwidthBytes: 1e8, maxConnections: 1024 };
const chains = () =>
  (
    execFileSync('nft', ['list', 'chains', 'inet'])
      .toString()
      .match(/chain c_[0-9a-f]+/g) ?? []
  ).length;
const overlapping = {
  allowAll: false,
  cidrs: [
    { cidr: '198.51.100.0/24', ports: [{ port: 8000, endPort: 8100 }] },
    { cidr: '198.51.0.0/16', ports: [{ port: 8050 }] },
  ],
};
const out: Record<string, number> = {};
const first = new Egress(cfg, log);
for (const [id, slot] of [
  ['live', 1],
  ['gone', 2],
  ['ends', 3],
] as const) {
  const l = first.link(id, slot);
  if (id !== 'gone') execFileSync('ip', ['link', 'add', l.hostIf, 'type', 'veth', 'peer', 'name', `p${slot}`]);
  await first.apply(id, overlapping);
}
first.close();
out.beforeRestart = chains();
const next = new Egress(cfg, log);
await next.prepare();
out.afterRestart = chains(); // the chain of the box whose link is gone is deleted
await next.apply('live', { allowAll: false, cidrs: [] }); // its next policy needs no chain
await next.release('ends', null);
out.afterUpdateAndRelease = chains();
next.close();
console.log(JSON.stringify(out));
