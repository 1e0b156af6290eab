import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { cliOn } from '../helpers/cli.js';
import type { Job } from '../../src/platform/jobs/types.js';
import type { Devbox } from '../../src/resources/devboxes/index.js';
import { lostReason, SqlNodeStore } from '../../src/resources/nodes/index.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * The node registry in one server over SQLite (a stub runtime): it registers itself, declares lost a node
 * silent past its lease and grace (failing its boxes, ending their commands, taking over or ending its jobs),
 * leaves a gracefully stopped node alone, drains itself when `devboxd drain NODE` says so, and the CLI lists
 * it all. Other nodes are rows this test writes, as their servers would.
 */
const GiB = 1024 ** 3;
let f: FastApp;
let nodes: SqlNodeStore;

before(async () => {
  f = await buildFastApp({
    env: {
      DEVBOXD_NODE_NAME: 'fast-a',
      DEVBOXD_NODE_URL: 'http://127.0.0.1:4000',
      // Long: a loaded machine must not lapse this node's own lease between two steps (each test ticks it).
      DEVBOXD_NODE_LEASE_SECONDS: '60',
      DEVBOXD_NODE_CPU_CORES: '8',
      DEVBOXD_NODE_MEMORY: '32G',
      DEVBOXD_NODE_DISK: '500G',
      DEVBOXD_EVICT_GRACE_SECONDS: '0',
    },
  });
  nodes = new SqlNodeStore(f.deps.store.db);
});
after(() => f?.close());

/** The CLI in this process on the app's database. */
const cli = (...args: string[]) => cliOn(f.dataDir, ...args);

/** A row for node `name` as its server writes at start, with its lease ending `leaseEndsInMs` from now. */
async function otherNode(name: string, leaseEndsInMs: number, graceMs = 0) {
  const now = Date.now();
  return nodes.register({
    name,
    address: null,
    apiUrl: null,
    capacity: { cpuCores: 4, memoryBytes: 16 * GiB, diskBytes: 100 * GiB },
    heartbeatMs: now + leaseEndsInMs - 3000,
    leaseExpiresMs: now + leaseEndsInMs,
    graceMs,
    startedAtMs: now - 60_000,
    version: '0.1.0',
  });
}

/** A box record on `node` in `status`, made from a box this server created (same account and settings). */
async function boxOn(node: string, status: Devbox['status'], template: Devbox): Promise<Devbox> {
  const d: Devbox = { ...template, id: `dbx_${node}_${status}_${Math.random().toString(36).slice(2, 8)}`, node, status, name: null };
  await f.deps.store.devboxes.insert(d);
  return d;
}

async function job(kind: string, node: string, state: Job['state']): Promise<Job> {
  const now = Date.now();
  const j: Job = {
    id: `job_${Math.random().toString(36).slice(2)}`,
    kind,
    subjectId: `none_such_${Math.random().toString(36).slice(2)}`,
    state,
    attempts: 1,
    lastError: null,
    runAfterMs: now,
    node,
    createTimeMs: now,
    updateTimeMs: now,
  };
  await f.deps.store.jobs.insert(j);
  return j;
}

let template: Devbox;

test('the server registers its node at start: address, the capacity its settings give, active, a live lease', async () => {
  const created = await f.call({
    method: 'POST',
    url: '/v1/devboxes/create_and_await_running',
    payload: { launch_parameters: { resource_size_request: 'MEDIUM' } },
  });
  assert.equal(created.statusCode, 200, created.body);
  template = (await f.deps.store.devboxes.getById(created.json().id))!;
  const me = (await f.deps.nodes.list()).find((n) => n.name === 'fast-a')!;
  assert.equal(me.state, 'active');
  assert.equal(me.lease, 'live');
  assert.equal(me.address, 'http://127.0.0.1:4000');
  assert.deepEqual(me.capacity, { cpuCores: 8, memoryBytes: 32 * GiB, diskBytes: 500 * GiB });
  assert.equal(me.devboxes, 1);
  assert.deepEqual(me.free, { cpuCores: 6, memoryBytes: 28 * GiB, diskBytes: 480 * GiB }, 'a MEDIUM box (2 cores, 4 GiB, 20 GiB) holds its size');
  assert.equal(me.leaseExpiresMs - me.heartbeatMs, 60_000);
  assert.equal(await f.deps.nodes.canPlace('fast-a', { cpuCores: 6, memoryBytes: GiB, diskBytes: GiB }), true);
  assert.equal(await f.deps.nodes.canPlace('fast-a', { cpuCores: 7, memoryBytes: GiB, diskBytes: GiB }), false);
  assert.equal(await f.deps.nodes.canPlace('no-such-node'), false);
});

test('a node silent past its lease and grace is declared lost once: its boxes fail naming it, suspended ones stay, its jobs move or end', async () => {
  const ghost = await otherNode('ghost', -5000);
  const running = await boxOn('ghost', 'running', template);
  const booting = await boxOn('ghost', 'provisioning', template);
  const suspended = await boxOn('ghost', 'suspended', template);
  const now = Date.now();
  await f.deps.store.executions.insert({
    id: `exe_${running.id}`,
    accountId: running.accountId,
    devboxId: running.id,
    command: 'sleep 1000',
    commandId: null,
    shellName: null,
    kind: 'exec',
    status: 'running',
    exitStatus: null,
    createTimeMs: now,
    endTimeMs: null,
    stdoutBytes: 0,
    stderrBytes: 0,
  });
  const build = await job('blueprint.build', 'ghost', 'running');
  const capture = await job('snapshot.capture', 'ghost', 'pending');
  const mine = await job('snapshot.capture', 'fast-a', 'pending');

  await f.deps.nodes.tick();
  const reason = lostReason('ghost', ghost.heartbeatMs);
  assert.equal((await nodes.get('ghost'))!.state, 'lost');
  for (const d of [running, booting]) {
    const now = (await f.deps.store.devboxes.getById(d.id))!;
    assert.equal(now.status, 'failure', `${d.status} → failure`);
    assert.equal(now.failureReason, 'health_check_failed');
    assert.equal(now.stateTransitions.at(-1)!.failureReason, reason);
  }
  assert.equal((await f.deps.store.devboxes.getById(suspended.id))!.status, 'suspended', 'a suspended box keeps its disk and its status');
  const view = (await f.call({ method: 'GET', url: `/v1/devboxes/${running.id}` })).json();
  assert.equal(view.status, 'failure');
  assert.match(JSON.stringify(view.state_transitions), /node ghost stopped answering \(no heartbeat since /);
  const exe = (await f.deps.store.executions.get(running.id, `exe_${running.id}`))!;
  assert.deepEqual([exe.status, exe.exitStatus], ['completed', 137]);
  // A build runs anywhere: this node took it (and ran it: its blueprint does not exist, so it is done at once).
  const moved = await until(
    'the build job settles here',
    async () => {
      const j = await f.deps.store.jobs.get(build.id);
      return j?.state === 'succeeded' && j;
    },
    10_000,
    50,
  );
  assert.equal(moved.node, 'fast-a');
  // A capture works on the lost node's disk: it ends, with the reason.
  const ended = (await f.deps.store.jobs.get(capture.id))!;
  assert.deepEqual([ended.state, ended.node, ended.lastError], ['failed', 'ghost', reason]);
  assert.equal((await f.deps.store.jobs.get(mine.id))!.node, 'fast-a', "this node's own jobs are not touched");

  assert.equal(await f.deps.nodes.declareLost(ghost), false, 'a node is declared lost once (the compare-and-set)');
  // It comes back under the same name: active again, and what failed stays failed.
  const back = await otherNode('ghost', 3000);
  assert.deepEqual([back.state, back.lostAtMs], ['active', null]);
  assert.equal((await f.deps.store.devboxes.getById(running.id))!.status, 'failure');
});

test('a node stopped gracefully is never declared lost: its boxes keep running, to be adopted at its start', async () => {
  await otherNode('resting', -60_000);
  await nodes.stopped('resting', Date.now() - 50_000);
  const box = await boxOn('resting', 'running', template);
  await f.deps.nodes.tick();
  const n = (await f.deps.nodes.list()).find((l) => l.name === 'resting')!;
  assert.deepEqual([n.state, n.lease, n.devboxes], ['active', 'stopped', 1]);
  assert.equal((await f.deps.store.devboxes.getById(box.id))!.status, 'running');
  // Within its grace, a silent node is not lost yet either.
  await otherNode('late', -1000, 60_000);
  await f.deps.nodes.tick();
  assert.equal((await nodes.get('late'))!.state, 'active');
});

test('devboxd nodes lists every node (--json too) with state, lease, capacity, free room and box count', async () => {
  const table = await cli('nodes');
  assert.equal(table.code, 0, table.err);
  const lines = table.out.trim().split('\n');
  assert.equal(lines[0], 'NAME\tSTATE\tLEASE\tADDRESS\tAPI_URL\tCPU\tMEMORY\tDISK\tFREE_CPU\tFREE_MEMORY\tFREE_DISK\tDEVBOXES\tHEARTBEAT');
  const row = (name: string) => lines.find((l) => l.startsWith(`${name}\t`))!.split('\t');
  assert.deepEqual(row('fast-a').slice(0, 12), [
    'fast-a',
    'active',
    'live',
    'http://127.0.0.1:4000',
    '-',
    '8',
    '32.0GiB',
    '500.0GiB',
    '6',
    '28.0GiB',
    '480.0GiB',
    '1',
  ]);
  assert.deepEqual(row('ghost').slice(0, 3), ['ghost', 'active', 'live']);
  assert.deepEqual(row('resting').slice(0, 3), ['resting', 'active', 'stopped']);
  const json = await cli('nodes', '--json');
  assert.equal(json.code, 0, json.err);
  const listed = JSON.parse(json.out).nodes as Record<string, unknown>[];
  const a = listed.find((n) => n.name === 'fast-a')!;
  assert.deepEqual(a.capacity, { cpu_cores: 8, memory_bytes: 32 * GiB, disk_bytes: 500 * GiB });
  assert.deepEqual(a.free, { cpu_cores: 6, memory_bytes: 28 * GiB, disk_bytes: 480 * GiB });
  assert.deepEqual([a.state, a.lease, a.devboxes, a.address], ['active', 'live', 1, 'http://127.0.0.1:4000']);
  assert.equal(typeof a.heartbeat_time_ms, 'number');
  assert.equal(listed.find((n) => n.name === 'resting')!.devboxes, 1);
});

test('devboxd drain NODE: the node takes no new box and suspends its own; undrain lets it take boxes again', async () => {
  const unknown = await cli('drain', 'no-such-node', '--wait-seconds', '0');
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /no node named no-such-node/);
  // The lost node failed already: nothing to drain.
  await otherNode('gone', -5000);
  await f.deps.nodes.tick();
  const lost = await cli('drain', 'gone');
  assert.equal(lost.code, 1);
  assert.match(lost.err, /node gone is lost/);

  const draining = cli('drain', 'fast-a', '--wait-seconds', '30');
  // This server notices at its next renewal: the test renews now rather than wait a third of the lease.
  await until('fast-a marked draining', async () => (await nodes.get('fast-a'))?.state === 'draining', 10_000, 50);
  await f.deps.nodes.tick();
  const drained = await draining;
  assert.equal(drained.code, 0, drained.out + drained.err);
  assert.match(drained.out, /node fast-a is draining/);
  assert.match(drained.out, /drained: node fast-a holds no running devbox/);
  assert.equal((await f.deps.store.devboxes.getById(template.id))!.status, 'suspended');
  assert.equal((await nodes.get('fast-a'))!.state, 'draining');
  const refused = await f.call({ method: 'POST', url: '/v1/devboxes', payload: {} });
  assert.equal(refused.statusCode, 503);
  assert.match(refused.json().message, /node fast-a is draining/);
  const resume = await f.call({ method: 'POST', url: `/v1/devboxes/${template.id}/resume` });
  assert.equal(resume.statusCode, 503);
  // Six cores: only fast-a has them (the other live nodes offer 4), and it is draining.
  const big = { cpuCores: 6, memoryBytes: GiB, diskBytes: GiB };
  assert.equal(await f.deps.nodes.place(big), undefined, 'placement passes a draining node by');

  const undrained = await cli('undrain', 'fast-a');
  assert.equal(undrained.code, 0, undrained.err);
  await f.deps.nodes.tick();
  const created = await f.call({ method: 'POST', url: '/v1/devboxes', payload: {} });
  assert.equal(created.statusCode, 200, created.body);
  assert.equal(await f.deps.nodes.place(big), 'fast-a', 'active again, with room');
});

test('devboxd nodes forget removes only a lost node', async () => {
  const active = await cli('nodes', 'forget', 'fast-a');
  assert.equal(active.code, 1);
  assert.match(active.err, /node fast-a is active: only a lost node is forgotten/);
  const gone = await cli('nodes', 'forget', 'gone');
  assert.equal(gone.code, 0, gone.err);
  assert.equal(await nodes.get('gone'), undefined);
});
