import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, intsOf } from '../../src/platform/config-error.js';
import { cpuQuota, hostCapacity, memoryLimit } from '../../src/resources/nodes/capacity.js';
import { apiUrlOf, loadNodeConfig } from '../../src/resources/nodes/config.js';
import { canPlace, choose, leaseState, pick, loadsOf, lostAtMs, lostReason, overdue, renewEveryMs, type NodeRecord } from '../../src/resources/nodes/index.js';

/** Placement, the lease arithmetic and the registry's settings: pure functions, no server. */
const GiB = 1024 ** 3;
const NOW = 1_800_000_000_000;

function node(name: string, over: Partial<NodeRecord> = {}): NodeRecord {
  return {
    name,
    address: null,
    apiUrl: null,
    capacity: { cpuCores: 8, memoryBytes: 32 * GiB, diskBytes: 200 * GiB },
    state: 'active',
    heartbeatMs: NOW - 1000,
    leaseExpiresMs: NOW + 14_000,
    graceMs: 30_000,
    startedAtMs: NOW - 60_000,
    stoppedAtMs: null,
    lostAtMs: null,
    version: '0.1.0',
    ...over,
  };
}
const size = (cpuCores: number, memGiB: number, diskGiB = 20) => ({ cpuCores, memoryBytes: memGiB * GiB, diskBytes: diskGiB * GiB });

test("a node's load is the sum of its boxes' sizes; free room is capacity minus it (negative when overcommitted)", () => {
  const [a, b] = loadsOf(
    [node('a'), node('b', { capacity: size(2, 4, 30) })],
    [
      { node: 'a', size: size(2, 4) },
      { node: 'a', size: size(0.5, 1) },
      { node: 'b', size: size(1, 2) },
      { node: 'b', size: size(1, 2) },
      { node: 'gone', size: size(64, 64) },
    ],
    NOW,
  );
  assert.deepEqual([a!.devboxes, a!.used, a!.free], [2, size(2.5, 5, 40), size(5.5, 27, 160)]);
  assert.deepEqual([b!.devboxes, b!.free], [2, size(0, 0, -10)]);
  assert.equal(a!.lease, 'live');
});

test('a box goes to the least loaded node with room for its size; none with room: undefined', () => {
  const loads = loadsOf(
    [node('a'), node('b'), node('c', { capacity: size(64, 256, 2000) })],
    [
      { node: 'a', size: size(4, 8) },
      { node: 'b', size: size(1, 2) },
      { node: 'c', size: size(60, 16) },
    ],
    NOW,
  );
  // c has the most memory and disk free, but on CPU (its scarcest part) it is the fullest.
  assert.equal(choose(loads, size(1, 2))?.name, 'b');
  // Free cores: a 4, b 7, c 4. A box of 5 fits only on b; one of 4 fits on all three, and b keeps the most.
  assert.equal(choose(loads, size(5, 4))?.name, 'b');
  assert.equal(choose(loads, size(4, 4))?.name, 'b');
  assert.equal(choose(loads, size(8, 4)), undefined, 'no node has 8 cores free');
  // 100 GiB of memory: only c has it free (a 24, b 30), and 2 of its 4 free cores.
  assert.equal(choose(loads, size(2, 100))?.name, 'c');
  assert.equal(choose(loads, size(1, 300)), undefined, 'no node has 300 GiB free');
  // Ties go to the node with fewer boxes, then by name.
  const even = loadsOf([node('y'), node('x')], [], NOW);
  assert.equal(choose(even, size(1, 1))?.name, 'x');
});

test('only active nodes with a live lease take boxes: draining, lost, lapsed and stopped ones do not', () => {
  const loads = loadsOf(
    [
      node('draining', { state: 'draining' }),
      node('lost', { state: 'lost' }),
      node('lapsed', { leaseExpiresMs: NOW - 1 }),
      node('stopped', { stoppedAtMs: NOW - 5000 }),
      node('ok', { capacity: size(1, 1, 1) }),
    ],
    [],
    NOW,
  );
  assert.deepEqual(
    loads.filter((n) => canPlace(n)).map((n) => n.name),
    ['ok'],
  );
  assert.equal(canPlace(loads.at(-1)!, size(1, 1, 1)), true, 'a box that fills the node exactly fits');
  assert.equal(canPlace(loads.at(-1)!, size(1, 1, 2)), false);
  assert.equal(choose(loads, size(2, 1)), undefined);
});

test('pick: the preferred node when it has room, else the least loaded; none with room: overcommitted on an open node; none open: undefined', () => {
  const loads = loadsOf(
    [node('a'), node('b'), node('off', { state: 'draining' })],
    [
      { node: 'a', size: size(3, 4) },
      { node: 'a', size: size(3, 4) },
      { node: 'b', size: size(1, 2) },
    ],
    NOW,
  );
  assert.equal(pick(loads, size(1, 1), 'a')?.name, 'b', 'least loaded');
  assert.equal(pick(loads, size(1, 1), 'b', 'a')?.name, 'a', 'a resume stays on its own node while it has room');
  assert.equal(pick(loads, size(4, 1), 'a', 'a')?.name, 'b', 'its own node is full: another');
  assert.equal(pick(loads, size(16, 1), 'a')?.name, 'a', 'no room anywhere: this node, overcommitted');
  assert.equal(pick(loads, size(16, 1), 'a', 'b')?.name, 'b', 'no room anywhere: the preferred node');
  assert.equal(pick(loads, size(16, 1), 'off')?.name, 'b', 'this node draining: the open one with the fewest boxes');
  assert.equal(pick(loads, size(1, 1), 'a', 'off')?.name, 'b', 'a draining node is never picked');
  assert.equal(pick(loadsOf([node('off', { state: 'draining' })], [], NOW), size(1, 1), 'off'), undefined);
});

test('DEVBOXD_API_URL: as set, else derived from DEVBOXD_HOST and DEVBOXD_PORT only where another host reaches them', () => {
  assert.equal(apiUrlOf('https://api-a.example', '0.0.0.0', 4000), 'https://api-a.example');
  assert.equal(apiUrlOf(undefined, '10.0.0.7', 4000), 'http://10.0.0.7:4000');
  assert.equal(apiUrlOf(undefined, 'fd00::7', 4000), 'http://[fd00::7]:4000');
  assert.equal(apiUrlOf(undefined, 'node-a.internal', 4000), 'http://node-a.internal:4000');
  for (const host of ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost', '169.254.1.1']) assert.equal(apiUrlOf(undefined, host, 4000), null, host);
  assert.equal(apiUrlOf(undefined, '10.0.0.7', 0), null, 'a port picked at start is not known ahead');
});

test('lease arithmetic: renewed every third of the lease; lost past lease and grace, never when stopped gracefully', () => {
  assert.equal(renewEveryMs(15_000), 5000);
  assert.equal(renewEveryMs(100), 100, 'at least 100 ms apart');
  const n = node('n', { leaseExpiresMs: NOW, graceMs: 30_000 });
  assert.equal(leaseState(n, NOW), 'live');
  assert.equal(leaseState(n, NOW + 1), 'lapsed');
  assert.equal(lostAtMs(n), NOW + 30_000);
  assert.equal(overdue(n, NOW + 30_000), false, 'within the grace');
  assert.equal(overdue(n, NOW + 30_001), true);
  assert.equal(overdue({ ...n, stoppedAtMs: NOW - 1 }, NOW + 60_000), false, 'a graceful stop is not a loss');
  assert.equal(leaseState({ ...n, stoppedAtMs: NOW - 1 }, NOW), 'stopped');
  assert.equal(overdue({ ...n, state: 'lost' }, NOW + 60_000), false, 'lost once');
  assert.equal(lostReason('n2', Date.UTC(2026, 10, 29, 12)), 'node n2 stopped answering (no heartbeat since 2026-11-29T12:00:00.000Z)');
});

test("the registry's settings: defaults, overrides, and a bad value refused naming its variable", () => {
  const load = (env: Record<string, string>) => loadNodeConfig(env, intsOf(env), (m) => new ConfigError(m));
  assert.deepEqual(load({}), { url: null, apiUrl: undefined, leaseMs: 15_000, graceMs: 30_000, capacity: {} });
  assert.deepEqual(
    load({
      DEVBOXD_NODE_URL: 'https://n1.example:4000',
      DEVBOXD_API_URL: 'http://10.0.0.7:4000/',
      DEVBOXD_NODE_LEASE_SECONDS: '2',
      DEVBOXD_NODE_GRACE_SECONDS: '0',
      DEVBOXD_NODE_CPU_CORES: '7.5',
      DEVBOXD_NODE_MEMORY: '64G',
      DEVBOXD_NODE_DISK: '2T',
    }),
    {
      url: 'https://n1.example:4000',
      apiUrl: 'http://10.0.0.7:4000',
      leaseMs: 2000,
      graceMs: 0,
      capacity: { cpuCores: 7.5, memoryBytes: 64 * GiB, diskBytes: 2048 * GiB },
    },
  );
  for (const [name, value] of [
    ['DEVBOXD_NODE_URL', 'ftp://n1'],
    ['DEVBOXD_NODE_URL', 'http://user:pw@n1'],
    ['DEVBOXD_API_URL', 'unix:/run/api.sock'],
    ['DEVBOXD_API_URL', 'http://10.0.0.7:4000/v1'],
    ['DEVBOXD_NODE_LEASE_SECONDS', '0'],
    ['DEVBOXD_NODE_GRACE_SECONDS', '-1'],
    ['DEVBOXD_NODE_CPU_CORES', '0'],
    ['DEVBOXD_NODE_CPU_CORES', 'lots'],
    ['DEVBOXD_NODE_MEMORY', '50%'],
    ['DEVBOXD_NODE_DISK', '12 parsecs'],
  ] as const) {
    assert.throws(
      () => load({ [name]: value }),
      (err: Error) => err instanceof ConfigError && err.message.startsWith(name),
      `${name}=${value}`,
    );
  }
});

test("a node's capacity from the host: its cgroup's CPU quota and memory limit (v2 or v1), else the host's", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-cgroup-'));
  try {
    const put = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), text);
    };
    put('srv/devboxd/cpu.max', '150000 100000\n');
    put('srv/devboxd/memory.max', `${6 * GiB}\n`);
    const v2 = new Map([['', '/srv/devboxd']]);
    assert.equal(cpuQuota(root, v2), 1.5);
    assert.equal(memoryLimit(root, v2), 6 * GiB);
    put('open/cpu.max', 'max 100000\n');
    put('open/memory.max', 'max\n');
    assert.equal(cpuQuota(root, new Map([['', '/open']])), undefined, 'no quota');
    assert.equal(memoryLimit(root, new Map([['', '/open']])), undefined, 'no limit');
    // A v1 hierarchy (this machine kind is a hybrid): quota -1 and a limit near 2^63 say "none".
    put('cpu,cpuacct/svc/cpu.cfs_quota_us', '200000\n');
    put('cpu,cpuacct/svc/cpu.cfs_period_us', '100000\n');
    put('memory/svc/memory.limit_in_bytes', `${3 * GiB}\n`);
    put('memory/free/memory.limit_in_bytes', '9223372036854771712\n');
    const v1 = new Map([
      ['cpu', '/svc'],
      ['memory', '/svc'],
    ]);
    assert.deepEqual([cpuQuota(root, v1), memoryLimit(root, v1)], [2, 3 * GiB]);
    assert.equal(memoryLimit(root, new Map([['memory', '/free']])), undefined);
    // Without a cgroup file to read: the host's cores and memory, the data dir's filesystem; settings win.
    const host = hostCapacity(root, {}, path.join(root, 'none'));
    assert.ok(host.cpuCores >= 1 && host.cpuCores <= os.availableParallelism());
    assert.ok(host.memoryBytes > 0 && host.memoryBytes <= os.totalmem());
    const fsBytes = fs.statfsSync(root);
    assert.equal(host.diskBytes, fsBytes.blocks * fsBytes.bsize);
    assert.deepEqual(hostCapacity(root, { cpuCores: 3, memoryBytes: GiB, diskBytes: 2 * GiB }), { cpuCores: 3, memoryBytes: GiB, diskBytes: 2 * GiB });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
