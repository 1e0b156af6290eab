/**
 * What port 53 of the host a box reaches, with the real Egress rules in a host and box namespace the test
 * makes (test/helpers/egress-dns-probe.sh): only a socket bound to its own host end, as the forwarder's are.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

test("a box's DNS reaches only a socket bound to its own host end, never a *:53 host service or another box's end; a box address from elsewhere is dropped; a UDP flood is cut in the kernel", () => {
  const probe = new URL('../helpers/egress-dns-probe.sh', import.meta.url).pathname;
  const out = execFileSync('unshare', ['-n', '-m', 'sh', probe], { encoding: 'utf8', timeout: 60_000 });
  const { floodReached, ...r } = JSON.parse(out.trim().split('\n').pop()!) as Record<string, string>;
  // Before: the kernel passed every question of a flood up to the server (about 900 of 2000 here, the rest
  // overflowing the socket); now past a burst of 400 they are dropped before the server reads them.
  assert.ok(Number(floodReached) > 0 && Number(floodReached) <= 420, `${floodReached} of 2000 reached the server`);
  // Before: the rule accepted port 53 of every host end, and whatever listened there answered.
  assert.deepEqual(r, { wildcardOwnEnd: '', wildcardOtherEnd: '', boundOwnEnd: 'forwarder', boundOtherEnd: '', spoofedGotThrough: 'false' });
});
