/** The floor of the real Egress, in a network namespace the test makes: every host network, re-read at boot. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { hostIfName } from '../../src/runtime/linux/egress.js';
import { nodeScript } from '../helpers/paths.js';

test('the floor holds every host interface network (re-read at each boot), metadata ranges, and not the open interfaces', () => {
  const probe = nodeScript(import.meta.url, '../helpers/egress-floor-probe.ts').join(' ');
  const out = execFileSync('unshare', ['-n', 'sh', '-c', `ip link set lo up && exec node ${probe}`], { encoding: 'utf8', timeout: 60_000 });
  const r = JSON.parse(out.trim().split('\n').pop()!) as { atStart: string; afterBoot: string; afterUpdate: Record<'never' | 'cidrs' | 'all', string> };
  // Without DEVBOXD_EGRESS_DENY's default: these are in the built-in floor.
  for (const cidr of ['100.64.0.0/10', '168.63.129.16', '169.254.0.0/16', '10.88.0.0/16'])
    assert.ok(r.atStart.includes(cidr), `${cidr} at start: ${r.atStart}`);
  // The host's networks are this server's floor, per box (another server of the host may open other
  // interfaces): not in the host-wide set, and in the box's own, read at its boot.
  assert.ok(!r.atStart.includes('192.0.2.0/30'));
  for (const cidr of ['192.0.2.0/30', '192.168.77.0/24', '198.51.100.0/24', '203.0.113.1'])
    assert.ok(r.afterBoot.includes(cidr), `${cidr} after a boot: ${r.afterBoot}`);
  assert.ok(!r.afterBoot.includes('203.0.113.0/24'), 'an open interface keeps its network reachable (its own address stays refused)');
  // The private ranges are in the box's floor but the one the operator opened (DEVBOXD_EGRESS_PRIVATE_ALLOW),
  // where the host's own network stays.
  for (const cidr of ['10.0.0.0/8', '172.16.0.0/12']) assert.ok(r.afterBoot.includes(cidr), `${cidr} after a boot: ${r.afterBoot}`);
  assert.ok(!r.afterBoot.includes('192.168.0.0/16'), r.afterBoot);
  // A deny entry that starts where a host network does is held whole, not only that network.
  assert.ok(r.afterBoot.includes('198.18.200.0/22'), r.afterBoot);
  // An update after the host gained a network: that network joins the floor, and the new policy is in force.
  assert.ok(r.afterUpdate.never.includes('198.18.210.0/24') && r.afterUpdate.never.includes('10.0.0.0/8'), r.afterUpdate.never);
  assert.match(r.afterUpdate.cidrs, /"dbx[0-9a-f]+" \. 198\.51\.0\.0\/16/);
  assert.doesNotMatch(r.afterUpdate.all, /dbx/);
});

test("two nodes of one host, over an older devboxd's table: each one's floor and bounds hold its own boxes, through the other's restarts", () => {
  const probe = nodeScript(import.meta.url, '../helpers/egress-two-servers-probe.ts').join(' ');
  const out = execFileSync('unshare', ['-n', 'sh', '-c', `ip link set lo up && exec node ${probe}`], { encoding: 'utf8', timeout: 60_000 });
  const r = JSON.parse(out.trim().split('\n').pop()!) as Probe;
  // The older table (shared bounds, `known` boxes) is made anew in this layout.
  assert.equal(r.upgraded.known, null);
  assert.ok(r.upgraded.sets.includes('never_box') && r.upgraded.sets.includes(r.names.a.sets.conns), r.upgraded.sets.join(' '));
  // The first node's box keeps its deny entry; the second node's box does not get it.
  const entries = [...r.both.neverBox.matchAll(/"(dbx[0-9a-f]+)" \. ([0-9./]+)/g)].map((m) => `${m[1]} ${m[2]}`);
  const owners = new Set(entries.filter((e) => e.endsWith(' 198.51.100.7')).map((e) => e.split(' ')[0]));
  assert.deepEqual([...owners], [hostIfName('box1')], `the first node's box has the deny entry: ${r.both.neverBox}`);
  // Both nodes' box subnets are out of every box's reach.
  for (const cidr of ['10.88.0.0/16', '10.90.0.0/16']) assert.ok(r.both.never4.includes(cidr), `${cidr}: ${r.both.never4}`);
  // Each box jumps to its own node's chain, which holds that node's bounds: the one started later set
  // nothing for the first one's box.
  assert.match(r.both.nodes, new RegExp(`"${hostIfName('box1')}" : jump ${r.names.a.chain}\\b`));
  assert.match(r.both.nodes, new RegExp(`"${hostIfName('box2')}" : jump ${r.names.b.chain}\\b`));
  assert.match(r.both.a, /ct count over 24 /);
  assert.match(r.both.a, /limit rate over 1000000 bytes\/second/);
  assert.match(r.both.b, /ct count over 40 /);
  assert.match(r.both.b, /limit rate over 2000000 bytes\/second/);
  // The second node restarted with another bound: its chain has it (counted in a new set, the old one gone),
  // the first node's chain and sets are as they were.
  assert.equal(r.afterB.a, r.both.a);
  assert.match(r.afterB.b, /ct count over 56 /);
  assert.ok(!r.afterB.sets.includes(r.names.b.sets.conns) && r.afterB.sets.includes(r.names.b2.sets.conns), r.afterB.sets.join(' '));
  assert.equal(r.afterB.nodes, r.both.nodes);
  for (const s of Object.values(r.names.a.sets)) assert.ok(r.afterB.sets.includes(s), `${s}: ${r.afterB.sets.join(' ')}`);
  // The first node restarted with the same bounds: both nodes' chains and sets stay as they were.
  assert.equal(r.afterA.a, r.both.a);
  assert.equal(r.afterA.b, r.afterB.b);
  assert.deepEqual(r.afterA.sets, r.afterB.sets);
});

interface Probe {
  upgraded: { sets: string[]; known: string | null };
  both: Record<'a' | 'b' | 'nodes' | 'neverBox' | 'never4', string>;
  afterB: { a: string; b: string; nodes: string; sets: string[] };
  afterA: { a: string; b: string; sets: string[] };
  names: Record<'a' | 'b' | 'b2', { chain: string; sets: Record<'conns' | 'bwIn' | 'bwOut', string> }>;
}
