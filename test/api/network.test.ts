/**
 * Egress under network policies (issue 13, items 1 and 2), through the official SDK against real boxes and
 * an outside world the test builds (test/helpers/outside-world.ts): allowed names are reached over HTTP and
 * TLS, everything else is refused by name and by address; the devboxd API, host services, the
 * never-reachable list and other boxes stay out of reach; policy updates reach running boxes; all of it
 * holds after a server restart. Traffic goes only to 127.0.0.1 and the test's own namespace. The per-box
 * bandwidth and connection bounds are shown apart (network-bounds.test.ts; each node's own:
 * network-nodes.test.ts).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { ConflictError } from '@runloop/api-client';
import { execFileSync } from 'node:child_process';
import { hostIfName } from '../../src/runtime/linux/egress.js';
import { OUTSIDE, OUTSIDE_IF, startOutsideWorld, type OutsideWorld } from '../helpers/outside-world.js';
import { startTestServer, type TestServer, runInBox } from '../helpers/server.js';

const [ALLOWED, NEIGHBOUR, DENIED, OTHER] = OUTSIDE;

let world: OutsideWorld;
let server: TestServer;
let api: Runloop;
let hostService: Server;
let hostPort: number;

before(async () => {
  world = await startOutsideWorld();
  world.names.set('allowed.test', ALLOWED);
  world.names.set('neighbour.test', NEIGHBOUR);
  world.names.set('a.wild.test', ALLOWED);
  world.names.set('wild.test', ALLOWED);
  world.names.set('denied.test', DENIED);
  world.names.set('later.test', OTHER);
  // A host service on every address: only the host may reach it.
  hostService = createServer((_req, res) => res.end('host service'));
  await new Promise<void>((r) => hostService.listen(0, '0.0.0.0', r));
  hostPort = (hostService.address() as { port: number }).port;
  server = await startTestServer({
    DEVBOXD_HOST: '0.0.0.0',
    DEVBOXD_DNS_UPSTREAM: world.dnsUpstream,
    DEVBOXD_EGRESS_DENY: `169.254.0.0/16,${DENIED}/32`,
    // The outside world is a host interface: its network would be in the floor like any host network.
    DEVBOXD_EGRESS_OPEN_INTERFACES: OUTSIDE_IF,
    DEVBOXD_DEFAULT_EGRESS: 'allow',
  });
  api = server.client();
});
after(async () => {
  await server?.stop();
  hostService?.close();
  await world?.close();
});

const sh = (boxId: string, command: string) => runInBox(api, boxId, command);

/** curl's exit status and body: 0 reached; 6 name not resolved; 7 refused; 28 timed out. */
const curl = (boxId: string, url: string) => sh(boxId, `curl -sS -k -m 5 ${url}`);

async function reaches(boxId: string, url: string, body: RegExp) {
  const r = await curl(boxId, url);
  assert.equal(r.code, 0, `${url} from ${boxId}: ${r.err}`);
  assert.match(r.out, body);
}

async function refused(boxId: string, url: string) {
  const r = await curl(boxId, url);
  assert.notEqual(r.code, 0, `${url} was reachable from ${boxId}: ${r.out}`);
  return r;
}

const boxAddress = async (boxId: string) => (await sh(boxId, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1")).out.trim();
const hostEnd = async (boxId: string) => (await sh(boxId, "awk '/^nameserver/ {print $2}' /etc/resolv.conf")).out.trim();

async function newBox(policyId?: string) {
  const box = await api.devboxes.createAndAwaitRunning(policyId ? { launch_parameters: { network_policy_id: policyId } } : {});
  return box.id;
}

describe('a policy of host names', () => {
  let policyId: string;
  let box: string;
  before(async () => {
    const p = await api.networkPolicies.create({ name: 'names', allowed_hostnames: ['allowed.test', '*.wild.test'] });
    policyId = p.id;
    box = await newBox(policyId);
  });

  test('an allowed name is reached over HTTP and TLS, a wildcard name too', async () => {
    await reaches(box, 'http://allowed.test/', new RegExp(`outside ${ALLOWED} allowed.test`));
    await reaches(box, 'https://allowed.test/', new RegExp(`outside ${ALLOWED} allowed.test`));
    await reaches(box, 'http://a.wild.test/', new RegExp(`outside ${ALLOWED}`));
  });

  test('other names do not resolve, and addresses nobody resolved are refused (a neighbour of an allowed one)', async () => {
    const byName = await refused(box, 'http://neighbour.test/');
    assert.equal(byName.code, 6, byName.err);
    assert.equal((await refused(box, 'http://wild.test/')).code, 6, '*.wild.test does not cover wild.test');
    await refused(box, `http://${NEIGHBOUR}/`);
    await refused(box, `https://${NEIGHBOUR}/`);
    assert.ok(!world.asked.includes('neighbour.test'), 'a name the policy refuses is never asked upstream');
    // The same answers over TCP (what a resolver asks after a truncated UDP answer).
    const tcpAsk = `
import socket, struct, sys
ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]
for name in sys.argv[1:]:
    q = struct.pack('>HHHHHH', 7, 0x0100, 1, 0, 0, 0) + b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\\0' + struct.pack('>HH', 1, 1)
    s = socket.create_connection((ns, 53), timeout=5)
    s.sendall(struct.pack('>H', len(q)) + q)
    n = struct.unpack('>H', s.recv(2))[0]
    a = b''
    while len(a) < n: a += s.recv(n - len(a))
    print(name, a[3] & 15, struct.unpack('>H', a[6:8])[0], '.'.join(map(str, a[-4:])) if a[3] & 15 == 0 else '-')
`;
    await api.devboxes.writeFileContents(box, { file_path: '/tmp/tcpdns.py', contents: tcpAsk });
    const tcp = await sh(box, 'python3 /tmp/tcpdns.py allowed.test neighbour.test');
    assert.equal(tcp.code, 0, tcp.err);
    assert.deepEqual(tcp.out.trim().split('\n'), [`allowed.test 0 1 ${ALLOWED}`, 'neighbour.test 3 0 -']);
  });

  test('an update reaches the running box: a newly allowed name works, a removed one stops', async () => {
    assert.equal((await refused(box, 'http://later.test/')).code, 6);
    await api.networkPolicies.update(policyId, { allowed_hostnames: ['later.test'] });
    await reaches(box, 'http://later.test/', new RegExp(`outside ${OTHER}`));
    assert.equal((await refused(box, 'http://allowed.test/')).code, 6);
    await api.networkPolicies.update(policyId, { allowed_hostnames: ['allowed.test', '*.wild.test'] });
  });

  test('a policy in use cannot be deleted', async () => {
    await assert.rejects(api.networkPolicies.delete(policyId), (err) => err instanceof ConflictError && /in use/.test(err.message));
  });
});

describe('what no policy opens', () => {
  let open: string;
  let other: string;
  before(async () => {
    const p = await api.networkPolicies.create({ name: 'open', allow_all: true, allow_devbox_to_devbox: true });
    [open, other] = await Promise.all([newBox(p.id), newBox(p.id)]);
  });

  test('allow_all reaches outside addresses by name and by address', async () => {
    await reaches(open, `http://${NEIGHBOUR}/`, new RegExp(`outside ${NEIGHBOUR}`));
    await reaches(open, 'https://neighbour.test/', new RegExp(`outside ${NEIGHBOUR}`));
  });

  test('the never-reachable list stays out of reach, by address and by name', async () => {
    await refused(open, `http://${DENIED}/`);
    await refused(open, 'http://denied.test/');
  });

  test('the devboxd API and host services are out of reach at every host address', async () => {
    const port = new URL(server.url).port;
    const gw = await hostEnd(open);
    assert.match(gw, /^\d+\.\d+\.\d+\.\d+$/);
    for (const addr of [gw, '198.18.0.1', '127.0.0.1']) {
      await refused(open, `http://${addr}:${port}/v1/devboxes`);
      await refused(open, `http://${addr}:${hostPort}/`);
    }
    // The test's own control: the host reaches its service.
    const res = await fetch(`http://127.0.0.1:${hostPort}/`);
    assert.equal(await res.text(), 'host service');
  });

  test('another box is out of reach', async () => {
    await sh(other, 'nohup python3 -m http.server 8000 >/dev/null 2>&1 & sleep 1');
    await reaches(other, 'http://127.0.0.1:8000/', /Directory listing/);
    const addr = await boxAddress(other);
    assert.match(addr, /^\d+\.\d+\.\d+\.\d+$/);
    await refused(open, `http://${addr}:8000/`);
  });
});

describe('defaults and CIDRs', () => {
  test('a box without a policy reaches the public internet (DEVBOXD_DEFAULT_EGRESS=allow)', async () => {
    const box = await newBox();
    await reaches(box, `http://${OTHER}/`, new RegExp(`outside ${OTHER}`));
    await refused(box, `http://${DENIED}/`);
  });

  test('a CIDR with a port rule opens that port of those addresses only', async () => {
    const p = await api.networkPolicies.create({ name: 'cidr', allowed_cidrs: [{ cidr: `${NEIGHBOUR}/32`, ports: [{ port: 443, protocol: 'TCP' }] }] });
    const box = await newBox(p.id);
    await reaches(box, `https://${NEIGHBOUR}/`, new RegExp(`outside ${NEIGHBOUR}`));
    await refused(box, `http://${NEIGHBOUR}/`);
    await refused(box, `https://${ALLOWED}/`);
  });

  test("CIDRs without ports open every port; overlapping port rules still hold (a chain of the box's own)", async () => {
    const any = await api.networkPolicies.create({ name: 'cidr-any', allowed_cidrs: [{ cidr: '198.18.0.0/24' }, { cidr: `${OTHER}/32` }] });
    const overlapping = await api.networkPolicies.create({
      name: 'cidr-overlap',
      allowed_cidrs: [
        { cidr: `${NEIGHBOUR}/32`, ports: [{ port: 443, protocol: 'TCP' }] },
        { cidr: '198.18.0.0/24', ports: [{ port: 440, end_port: 450 }] },
      ],
    });
    const [a, b] = await Promise.all([newBox(any.id), newBox(overlapping.id)]);
    await reaches(a, `http://${OTHER}/`, new RegExp(`outside ${OTHER}`));
    await reaches(a, `https://${NEIGHBOUR}/`, new RegExp(`outside ${NEIGHBOUR}`));
    await refused(a, `http://${DENIED}/`);
    await reaches(b, `https://${NEIGHBOUR}/`, new RegExp(`outside ${NEIGHBOUR}`));
    await reaches(b, `https://${OTHER}/`, new RegExp(`outside ${OTHER}`));
    await refused(b, `http://${NEIGHBOUR}/`);
    // An update moves the running box from its own chain to the sets.
    await api.networkPolicies.update(overlapping.id, { allowed_cidrs: [{ cidr: `${OTHER}/32`, ports: [{ port: 80 }] }] });
    await reaches(b, `http://${OTHER}/`, new RegExp(`outside ${OTHER}`));
    await refused(b, `https://${NEIGHBOUR}/`);
  });

  test('a deny-all policy reaches nothing, and names do not resolve', async () => {
    const p = await api.networkPolicies.create({ name: 'deny', allowed_hostnames: [] });
    const box = await newBox(p.id);
    await refused(box, `http://${OTHER}/`);
    assert.equal((await refused(box, 'http://allowed.test/')).code, 6);
  });
});

describe('persistence', () => {
  test('after a server restart (the box adopted) and a suspend/resume, the policy still holds', async () => {
    const p = await api.networkPolicies.create({ name: 'durable', allowed_hostnames: ['allowed.test'] });
    const box = await newBox(p.id);
    await server.restart();
    api = server.client();
    await reaches(box, 'http://allowed.test/', new RegExp(`outside ${ALLOWED}`));
    await refused(box, `http://${NEIGHBOUR}/`);
    assert.equal((await refused(box, 'http://neighbour.test/')).code, 6);
    await api.networkPolicies.update(p.id, { allowed_hostnames: ['neighbour.test'] });
    await reaches(box, 'http://neighbour.test/', new RegExp(`outside ${NEIGHBOUR}`));

    await api.devboxes.suspend(box);
    await api.devboxes.awaitSuspended(box);
    await api.devboxes.resume(box);
    await api.devboxes.awaitRunning(box);
    await reaches(box, 'http://neighbour.test/', new RegExp(`outside ${NEIGHBOUR}`));
    assert.equal((await refused(box, 'http://allowed.test/')).code, 6);
    await refused(box, `http://${ALLOWED}/`);
    await assert.rejects(api.networkPolicies.delete(p.id), ConflictError);
    const ifn = hostIfName(box);
    // The box's own elements (the bandwidth meters' entries expire by themselves within a minute).
    const table = () =>
      ['nodes', 'all_out', 'pinned', 'cidrs', 'cidr_any', 'cidr_port']
        .map((set) => execFileSync('nft', ['list', set === 'cidrs' || set === 'nodes' ? 'map' : 'set', 'inet', 'devboxd', set]).toString())
        .join('');
    assert.ok(table().includes(`"${ifn}"`), 'the running box has its elements');
    await api.devboxes.shutdown(box);
    await api.networkPolicies.delete(p.id);
    // Nothing of the box is left: its interface, its elements, its pinned addresses.
    assert.ok(!table().includes(`"${ifn}"`), `elements of ${ifn} are left:\n${table()}`);
    assert.throws(() => execFileSync('ip', ['link', 'show', ifn], { stdio: 'pipe' }));
  });
});

describe('boxes from snapshots', () => {
  test("a box from a snapshot takes the policy its create names, not its source box's", async () => {
    const open = await api.networkPolicies.create({ name: 'snap-open', allow_all: true });
    const narrow = await api.networkPolicies.create({ name: 'snap-narrow', allowed_hostnames: ['allowed.test'] });
    const source = await newBox(open.id);
    const snap = await api.devboxes.snapshotDisk(source, { name: 'net-snap' });
    const fromSnap = (await api.devboxes.createAndAwaitRunning({ snapshot_id: snap.id, launch_parameters: { network_policy_id: narrow.id } })).id;
    await reaches(fromSnap, 'http://allowed.test/', new RegExp(`outside ${ALLOWED}`));
    await refused(fromSnap, `http://${NEIGHBOUR}/`);
    assert.equal((await refused(fromSnap, 'http://neighbour.test/')).code, 6);
    await reaches(source, `http://${NEIGHBOUR}/`, new RegExp(`outside ${NEIGHBOUR}`));
  });
});

describe('box services under a policy', () => {
  /** Status and body of a request to the box services from inside the box. */
  const service = async (box: string, path: string) => {
    const r = await sh(box, `curl -sS -m 5 -o /tmp/body -w '%{http_code}' http://127.0.0.1:1023${path}; echo; cat /tmp/body`);
    const [code, ...body] = r.out.split('\n');
    return { code: Number(code), body: body.join('\n') };
  };
  const refusedByPolicy = (r: { code: number; body: string }) => r.code === 403 && /network policy of this devbox does not allow/.test(r.body);

  test('allow_mcp_gateway and allow_agent_gateway decide whether the hub and the gateway answer the box', async () => {
    const mcpOnly = await api.networkPolicies.create({ name: 'mcp-only', allow_mcp_gateway: true, allow_agent_gateway: false });
    const none = await api.networkPolicies.create({ name: 'no-services' });
    const [a, b, c] = await Promise.all([newBox(mcpOnly.id), newBox(none.id), newBox()]);
    assert.ok(!refusedByPolicy(await service(a, '/mcp')));
    assert.ok(refusedByPolicy(await service(a, '/gateway/X/v1')));
    assert.ok(refusedByPolicy(await service(b, '/mcp')));
    assert.ok(refusedByPolicy(await service(b, '/gateway/X/v1')));
    for (const path of ['/mcp', '/gateway/X/v1']) assert.ok(!refusedByPolicy(await service(c, path)), `a box without a policy reaches ${path}`);
    assert.equal((await service(b, '/_whoami')).code, 200);
    // An update reaches the running box.
    await api.networkPolicies.update(none.id, { allow_agent_gateway: true });
    assert.ok(!refusedByPolicy(await service(b, '/gateway/X/v1')));
    assert.ok(refusedByPolicy(await service(b, '/mcp')));
  });
});

// Runloop's object-oriented network-policy smoke test (api-client-ts
// tests/smoketests/object-oriented/network-policy.test.ts): the same calls through the same SDK.
describe('smoketest: object-oriented network policy', () => {
  let n = 0;
  const uniqueName = (p: string) => `${p}-${Date.now()}-${++n}`;
  type Policy = Awaited<ReturnType<ReturnType<TestServer['sdk']>['networkPolicy']['create']>>;
  const withPolicy = async (params: Parameters<ReturnType<TestServer['sdk']>['networkPolicy']['create']>[0], f: (p: Policy) => Promise<void>) => {
    const policy = await server.sdk().networkPolicy.create(params);
    try {
      await f(policy);
    } finally {
      await policy.delete().catch(() => undefined);
    }
  };

  test('network policy lifecycle: create, info, updates, delete', async () => {
    const sdk = server.sdk();
    const policy = await sdk.networkPolicy.create({
      name: uniqueName('sdk-network-policy'),
      allow_all: false,
      allowed_hostnames: ['github.com', '*.npmjs.org'],
      allow_devbox_to_devbox: false,
      description: 'Test network policy',
    });
    assert.ok(policy.id);
    let info = await policy.getInfo();
    assert.equal(info.id, policy.id);
    assert.match(info.name, /sdk-network-policy/);
    assert.equal(info.egress.allow_all, false);
    assert.ok(info.egress.allowed_hostnames.includes('github.com') && info.egress.allowed_hostnames.includes('*.npmjs.org'));
    assert.equal(info.egress.allow_devbox_to_devbox, false);
    assert.equal(info.description, 'Test network policy');

    const updated = await policy.update({
      name: uniqueName('sdk-network-policy-updated'),
      allow_all: false,
      allowed_hostnames: ['github.com', 'api.openai.com'],
      description: 'Updated test network policy',
    });
    assert.match(updated.name, /sdk-network-policy-updated/);
    assert.ok(updated.egress.allowed_hostnames.includes('api.openai.com'));
    assert.equal(updated.description, 'Updated test network policy');
    info = await policy.getInfo();
    assert.match(info.name, /sdk-network-policy-updated/);
    assert.equal(info.description, 'Updated test network policy');

    assert.equal((await policy.update({ allow_all: true })).egress.allow_all, true);
    assert.equal((await policy.getInfo()).egress.allow_all, true);
    assert.equal((await policy.update({ allow_devbox_to_devbox: true })).egress.allow_devbox_to_devbox, true);
    assert.equal((await policy.getInfo()).egress.allow_devbox_to_devbox, true);

    await policy.delete();
    await assert.rejects(policy.getInfo());
  });

  test('list and retrieval by id', async () => {
    const sdk = server.sdk();
    assert.ok(Array.isArray(await sdk.networkPolicy.list({ limit: 10 })));
    await withPolicy({ name: uniqueName('sdk-network-policy-retrieve'), allow_all: false, allowed_hostnames: ['github.com'] }, async (policy) => {
      const retrieved = sdk.networkPolicy.fromId(policy.id);
      assert.equal(retrieved.id, policy.id);
      const info = await retrieved.getInfo();
      assert.equal(info.id, policy.id);
      assert.match(info.name, /sdk-network-policy-retrieve/);
    });
  });

  test('egress configurations: allow_all, box-to-box, many names, deny-all, wildcards', async () => {
    await withPolicy({ name: uniqueName('sdk-policy-allow-all'), allow_all: true }, async (p) => {
      assert.equal((await p.getInfo()).egress.allow_all, true);
    });
    await withPolicy(
      { name: uniqueName('sdk-policy-devbox-to-devbox'), allow_all: false, allow_devbox_to_devbox: true, allowed_hostnames: ['github.com'] },
      async (p) => {
        const info = await p.getInfo();
        assert.equal(info.egress.allow_devbox_to_devbox, true);
        assert.equal(info.egress.allow_all, false);
        assert.ok(info.egress.allowed_hostnames.includes('github.com'));
      },
    );
    for (const hostnames of [
      ['github.com', '*.npmjs.org', 'api.openai.com', '*.googleapis.com'],
      ['*.github.com', '*.npmjs.org', 'api.openai.com'],
    ]) {
      await withPolicy({ name: uniqueName('sdk-policy-hostnames'), allow_all: false, allowed_hostnames: hostnames }, async (p) => {
        const info = await p.getInfo();
        assert.equal(info.egress.allow_all, false);
        assert.equal(info.egress.allowed_hostnames.length, hostnames.length);
        for (const h of hostnames) assert.ok(info.egress.allowed_hostnames.includes(h), h);
      });
    }
    await withPolicy({ name: uniqueName('sdk-policy-deny-all'), allow_all: false, allowed_hostnames: [] }, async (p) => {
      const info = await p.getInfo();
      assert.equal(info.egress.allow_all, false);
      assert.deepEqual(info.egress.allowed_hostnames, []);
    });
  });

  test('update operations: name, description, hostnames, several fields, allow_all both ways', async () => {
    const make = () => ({ name: uniqueName('sdk-policy-update-test'), allow_all: false, allowed_hostnames: ['github.com'] });
    await withPolicy(make(), async (policy) => {
      assert.match((await policy.update({ name: uniqueName('sdk-policy-updated-name') })).name, /sdk-policy-updated-name/);
      assert.match((await policy.getInfo()).name, /sdk-policy-updated-name/);
      assert.equal((await policy.update({ description: 'New description' })).description, 'New description');
      assert.equal((await policy.getInfo()).description, 'New description');
    });
    await withPolicy(make(), async (policy) => {
      const names = ['api.openai.com', '*.googleapis.com'];
      const updated = await policy.update({ allowed_hostnames: names });
      assert.deepEqual(updated.egress.allowed_hostnames, names);
      assert.equal((await policy.getInfo()).egress.allowed_hostnames.length, 2);
    });
    await withPolicy(make(), async (policy) => {
      const updated = await policy.update({
        name: uniqueName('sdk-policy-multi-update'),
        description: 'Multi-update description',
        allow_devbox_to_devbox: true,
        allowed_hostnames: ['github.com', 'api.openai.com'],
      });
      assert.match(updated.name, /sdk-policy-multi-update/);
      assert.equal(updated.description, 'Multi-update description');
      assert.equal(updated.egress.allow_devbox_to_devbox, true);
      assert.deepEqual(updated.egress.allowed_hostnames, ['github.com', 'api.openai.com']);
      const info = await policy.getInfo();
      assert.equal(info.egress.allow_devbox_to_devbox, true);
    });
    await withPolicy(make(), async (policy) => {
      assert.equal((await policy.getInfo()).egress.allow_all, false);
      assert.equal((await policy.update({ allow_all: true })).egress.allow_all, true);
      assert.equal((await policy.getInfo()).egress.allow_all, true);
      const back = await policy.update({ allow_all: false, allowed_hostnames: ['github.com'] });
      assert.equal(back.egress.allow_all, false);
      assert.ok(back.egress.allowed_hostnames.includes('github.com'));
      assert.equal((await policy.getInfo()).egress.allow_all, false);
    });
  });
});
