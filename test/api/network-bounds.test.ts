/**
 * The per-box bounds of issue 13 through the official SDK: a box downloads at most DEVBOXD_BOX_BANDWIDTH_MBIT
 * from the outside world the test builds (test/helpers/outside-world.ts) and holds at most
 * DEVBOXD_BOX_MAX_CONNECTIONS connections. The bounds are its node's own (network-nodes.test.ts: the server has
 * a node name no other test's server has); a rate is measured, so the test runner gives this file the host
 * alone (scripts/test.mjs, `alone`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { OUTSIDE, OUTSIDE_IF, startOutsideWorld, type OutsideWorld } from '../helpers/outside-world.js';
import { runInBox, startTestServer, type TestServer } from '../helpers/server.js';

const OTHER = OUTSIDE[3];
const BANDWIDTH_MBIT = 16;
const MAX_CONNECTIONS = 48;

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
    DEVBOXD_BOX_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
  });
  api = server.client();
});
after(async () => {
  await server?.stop();
  await world?.close();
});

const sh = (boxId: string, command: string) => runInBox(api, boxId, command);
const newBox = async () => (await api.devboxes.createAndAwaitRunning({})).id;

describe('per-box bounds', () => {
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

  test(`a box holds at most DEVBOXD_BOX_MAX_CONNECTIONS (${MAX_CONNECTIONS}) connections; closing some makes room`, async () => {
    const box = await newBox();
    const script = `
import socket
held, refused = [], 0
for i in range(${MAX_CONNECTIONS + 16}):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("${OTHER}", 80)); held.append(s)
    except OSError:
        refused += 1
print(len(held), refused)
for s in held[:8]:
    s.close()
import time; time.sleep(0.5)
s = socket.socket(); s.settimeout(3); s.connect(("${OTHER}", 80)); print("room")
`;
    await api.devboxes.writeFileContents(box, { file_path: '/tmp/conns.py', contents: script });
    const r = await sh(box, 'python3 /tmp/conns.py');
    assert.equal(r.code, 0, r.err);
    const [held, refused] = r.out.split('\n')[0]!.split(' ').map(Number);
    assert.ok(held! <= MAX_CONNECTIONS && held! >= MAX_CONNECTIONS - 2, `held ${held}`);
    assert.ok(refused! >= 16, `refused ${refused}`);
    assert.match(r.out, /room/);
  });
});
