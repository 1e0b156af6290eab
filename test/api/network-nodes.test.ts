/**
 * Nodes sharing a host keep their own network bounds (issue 26, item 5), through the official SDK against
 * real boxes: two servers with their own DEVBOXD_NODE_NAME, data dir, box subnet and connection bound. Each
 * one's boxes hold at most its own bound whichever started last, and keep it through the other's restarts
 * (which leave its nft chains as they were); every box stays out of the other node's boxes. Traffic goes only
 * to 127.0.0.1 and the test's own namespace.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { nodeChains } from '../../src/runtime/linux/egress-node.js';
import { startWorld } from '../helpers/egress-world.js';
import { runInBox, startTestServer, type TestServer } from '../helpers/server.js';

interface Node {
  name: string;
  subnet: string;
  conns: number;
  server?: TestServer;
  api?: Runloop;
}
const A: Node = { name: 'netnodes-a', subnet: '10.93.0.0/16', conns: 24 };
const B: Node = { name: 'netnodes-b', subnet: '10.94.0.0/16', conns: 40 };
/**
 * Connections a measurement tries beyond the box's bound: few, since the kernel sends the refusals' ICMP
 * at about one a second past a burst of six per box. A box under the other node's bound holds more (A's
 * bound is the lower), or fewer (B's), than its own.
 */
const BEYOND = 4;

/**
 * What the boxes connect to: a TCP server in a namespace of the test's (RFC 2544's benchmarking range: not
 * private, so a box with allow_all reaches it) that holds each connection until the box closes it (then
 * closes its end too: a half-closed connection would still count against the box).
 */
const WORLD = '198.18.203.2';
const WORLD_SERVER = `
require('node:net').createServer((s) => s.on('error', () => {})).listen(80, process.argv[1], () => console.log('ready'));
`;
let world: { close(): void };

before(async () => {
  world = await startWorld({
    ns: 'devboxd-np-nodes',
    hostIf: 'npnodes0',
    hostSide: '198.18.203.1',
    addresses: [WORLD],
    routes: [`${WORLD}/32`],
    server: WORLD_SERVER,
  });
  // One after the other: B starts last, as the server whose bounds used to hold for every box of the host.
  for (const n of [A, B]) {
    n.server = await startTestServer({
      DEVBOXD_NODE_NAME: n.name,
      DEVBOXD_BOX_SUBNET: n.subnet,
      DEVBOXD_BOX_MAX_CONNECTIONS: String(n.conns),
      DEVBOXD_DEFAULT_EGRESS: 'allow',
    });
    n.api = n.server.client();
  }
});
after(async () => {
  await Promise.all([A.server?.stop(), B.server?.stop()]);
  world?.close();
});

const conns = (tries: number) => `
import socket, time
time.sleep(0.3)
held, refused, addr = [], 0, None
for i in range(${tries}):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("${WORLD}", 80)); held.append(s); addr = s.getsockname()[0]
    except OSError:
        refused += 1
# Closing some makes room for as many.
for s in held[:4]:
    s.close()
time.sleep(0.5)
room = "room"
for i in range(4):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("${WORLD}", 80)); held.append(s)
    except OSError:
        room = "full"
print(len(held) - 4, refused, addr, room)
`;

/** How many connections the box holds at once, and its address; having closed some, it opens as many again. */
async function measure(n: Node, box: string): Promise<{ held: number; refused: number; address: string }> {
  await n.api!.devboxes.writeFileContents(box, { file_path: '/tmp/conns.py', contents: conns(n.conns + BEYOND) });
  const r = await runInBox(n.api!, box, 'python3 /tmp/conns.py');
  assert.equal(r.code, 0, r.err);
  const [held, refused, address, room] = r.out.trim().split(' ');
  assert.equal(room, 'room', 'closing connections makes room for as many');
  return { held: Number(held), refused: Number(refused), address: address! };
}

async function holdsItsBound(n: Node, box: string): Promise<string> {
  const m = await measure(n, box);
  assert.ok(m.held <= n.conns && m.held >= n.conns - 2, `a box of ${n.name} (bound ${n.conns}) held ${m.held}`);
  assert.equal(m.held + m.refused, n.conns + BEYOND);
  return m.address;
}

/** What the box's connect to `address` meets: EHOSTUNREACH when the floor refuses it. */
async function connectFrom(n: Node, box: string, address: string): Promise<string> {
  const script = `import socket, errno\ns = socket.socket(); s.settimeout(3)\ntry:\n    s.connect(("${address}", 8080)); print("open")\nexcept OSError as e:\n    print(errno.errorcode.get(e.errno, e.errno))\n`;
  await n.api!.devboxes.writeFileContents(box, { file_path: '/tmp/connect.py', contents: script });
  const r = await runInBox(n.api!, box, 'python3 /tmp/connect.py');
  assert.equal(r.code, 0, r.err);
  return r.out.trim();
}

const chainsOf = (n: Node) => {
  const c = nodeChains({ node: n.name, subnet: n.subnet, deny: [], bandwidthBytes: 1000 * 125_000, maxConnections: n.conns });
  return [c.chain, c.out].map((name) => execFileSync('nft', ['list', 'chain', 'inet', 'devboxd', name]).toString()).join('');
};

const inSubnet = (address: string, subnet: string) => address.split('.').slice(0, 2).join('.') === subnet.split('.').slice(0, 2).join('.');

test("each node's boxes hold its own connection bound, whichever node started last, through the other's restarts", async () => {
  const a = (await A.api!.devboxes.createAndAwaitRunning({})).id;
  const b = (await B.api!.devboxes.createAndAwaitRunning({})).id;
  const aAddress = await holdsItsBound(A, a);
  const bAddress = await holdsItsBound(B, b);
  assert.ok(inSubnet(aAddress, A.subnet) && inSubnet(bAddress, B.subnet), `${aAddress} ${bAddress}`);
  // The host-wide floor holds every node's subnet: no box reaches the other node's boxes.
  assert.equal(await connectFrom(A, a, bAddress), 'EHOSTUNREACH');
  assert.equal(await connectFrom(B, b, aAddress), 'EHOSTUNREACH');

  // A restarts (and adopts its box): B's box keeps B's bound, A's keeps A's.
  const bChains = chainsOf(B);
  await A.server!.restart();
  assert.equal(chainsOf(B), bChains, "A's start left B's chains as they were");
  assert.equal(await holdsItsBound(B, b), bAddress);
  assert.equal(await holdsItsBound(A, a), aAddress);

  // B restarts: A's boxes, old and new, keep A's bound; B's new box gets B's.
  const aChains = chainsOf(A);
  await B.server!.restart();
  assert.equal(chainsOf(A), aChains, "B's start left A's chains as they were");
  await holdsItsBound(A, a);
  await holdsItsBound(A, (await A.api!.devboxes.createAndAwaitRunning({})).id);
  const b2 = (await B.api!.devboxes.createAndAwaitRunning({})).id;
  assert.ok(inSubnet(await holdsItsBound(B, b2), B.subnet));
  assert.equal(await connectFrom(B, b2, aAddress), 'EHOSTUNREACH');
  assert.equal(await connectFrom(A, a, bAddress), 'EHOSTUNREACH');
});
