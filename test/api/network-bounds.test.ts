/**
 * The per-box bandwidth bound of issue 13 through the official SDK: a box downloads at most
 * DEVBOXD_BOX_BANDWIDTH_MBIT from the outside world the test builds (test/helpers/outside-world.ts). The bound is
 * its node's own (the server has a node name no other test's server has); a rate is measured, so the test
 * runner gives this file the host alone (scripts/test.mjs, `alone`). The connection bound, which needs no quiet
 * host, is shown per node in the pool (network-nodes.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { OUTSIDE, OUTSIDE_IF, startOutsideWorld, type OutsideWorld } from '../helpers/outside-world.js';
import { runInBox, startTestServer, type TestServer } from '../helpers/server.js';

const OTHER = OUTSIDE[3];
const BANDWIDTH_MBIT = 16;

let world: OutsideWorld;
let server: TestServer;
let api: Runloop;

before(async () => {
  world = await startOutsideWorld();
  server = await startTestServer({
    DEVBOXD_DNS_UPSTREAM: world.dnsUpstream,
    DEVBOXD_NODE_NAME: 'network-bounds',
    DEVBOXD_EGRESS_OPEN_INTERFACES: OUTSIDE_IF,
    DEVBOXD_DEFAULT_EGRESS: 'allow',
    DEVBOXD_BOX_BANDWIDTH_MBIT: String(BANDWIDTH_MBIT),
  });
  api = server.client();
});
after(async () => {
  await server?.stop();
  await world?.close();
});

const sh = (boxId: string, command: string) => runInBox(api, boxId, command);
const newBox = async () => (await api.devboxes.createAndAwaitRunning({})).id;

describe('per-box bandwidth', () => {
  test(`a box downloads at most DEVBOXD_BOX_BANDWIDTH_MBIT (${BANDWIDTH_MBIT} Mbit/s) once its first second's bucket is spent`, async () => {
    const box = await newBox();
    const rate = (BANDWIDTH_MBIT * 1e6) / 8;
    const bytes = 4 * rate;
    const r = await sh(box, `curl -sS -m 30 -o /dev/null -w '%{size_download} %{time_total}' http://${OTHER}/big/${bytes}`);
    assert.equal(r.code, 0, r.err);
    const [size, seconds] = r.out.trim().split(' ').map(Number);
    assert.equal(size, bytes);
    // The kernel's token bucket holds a second of rate plus the burst (a tenth): the rest comes at the rate.
    const least = (bytes - rate * 1.1) / rate;
    assert.ok(seconds! >= least * 0.9, `${bytes} bytes in ${seconds} s: faster than the bound`);
    assert.ok(seconds! < least * 3 + 2, `${bytes} bytes in ${seconds} s: far slower than the bound`);
  });
});
