import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type Runloop from '@runloop/api-client';
import { DEVBOXD_BIN, type PoolsListed, poolsCli, ROOT, runInBox, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Warm pools through the SDK: a create takes a ready box and is a fresh box to its tenant, no tenant sees a
 * pooled box before it takes it, a burst empties the pool and it fills again with new boxes, and the pooled
 * boxes of a server are adopted after a restart.
 */
let s: TestServer;
let api: Runloop;
const POOL = 2;
const cli = () => ({ DEVBOXD_DATA_DIR: s.dataDir });
const ready = (): string[] => (JSON.parse(poolsCli(cli(), 'list', '--json')) as PoolsListed).ready.flatMap((r) => r.devbox_ids);

async function until<T>(what: string, read: () => T | Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  for (const end = Date.now() + ms; ; ) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const full = () => until('the pool is full', ready, (ids) => ids.length === POOL);

/** What a tenant can see of its box from inside: processes, files of the writable places, network, identity. */
const LOOK = [
  'ps -eo user,args --no-headers | grep -v " ps -eo\\| sort$\\| sh -c " | sort',
  'find /root /home /tmp /var/tmp /etc /run -xdev 2>/dev/null | sort | md5sum',
  'ip -o link | cut -d" " -f2 | cut -d@ -f1 | sort',
  'cat /proc/net/tcp /proc/net/tcp6 | tail -n +2 | grep -v " 0A " | wc -l',
  'id; hostname; cat /etc/hostname',
].join('; echo ---; ');

before(async () => {
  s = await startTestServer({ DEVBOXD_WARM_POOL: String(POOL) });
  api = s.client();
});
after(() => s?.stop());

describe('warm pools', () => {
  test('a create takes a ready box, with everything it asked for, and it looks as a cold box does', async () => {
    const pooled = await full();
    const asked = {
      name: 'not a host label',
      metadata: { team: 'evals' },
      environment_variables: { GREETING: 'hello' },
      file_mounts: { '/home/user/note.txt': 'from the create' },
      launch_parameters: { launch_commands: ['echo launched > /tmp/launched'] },
    };
    const t = Date.now();
    const warm = await api.devboxes.createAndAwaitRunning(asked);
    assert.ok(pooled.includes(warm.id), 'the box came from the pool');
    assert.ok(!ready().includes(warm.id), 'and left it');
    assert.ok(warm.create_time_ms! >= t, 'its life starts at the create');
    assert.deepEqual(
      warm.state_transitions?.map((x) => x.status),
      ['provisioning', 'initializing', 'running'],
    );
    assert.equal(warm.name, 'not a host label');
    assert.deepEqual(warm.metadata, { team: 'evals' });
    const r = await runInBox(api, warm.id, 'echo $GREETING; cat /home/user/note.txt; echo; cat /tmp/launched');
    assert.equal(r.out, 'hello\nfrom the create\nlaunched\n');

    // A cold box of a size no pool keeps, made the same way: from inside, the two differ only by their ids.
    const cold = await api.devboxes.createAndAwaitRunning({ ...asked, launch_parameters: { ...asked.launch_parameters, resource_size_request: 'X_SMALL' } });
    assert.ok(!pooled.includes(cold.id));
    const [w, c] = await Promise.all([runInBox(api, warm.id, LOOK), runInBox(api, cold.id, LOOK)]);
    assert.equal(w.code, 0, w.err);
    assert.equal(w.out.replaceAll(warm.id.replaceAll('_', '-'), 'ID'), c.out.replaceAll(cold.id.replaceAll('_', '-'), 'ID'));
    await Promise.all([api.devboxes.shutdown(warm.id), api.devboxes.shutdown(cold.id)]);
  });

  test('no tenant sees or reaches a pooled box; a create naming a host label takes the cold path', async () => {
    const pooled = await full();
    for (const id of pooled) {
      await assert.rejects(api.devboxes.retrieve(id), (e: { status?: number }) => e.status === 404);
      await assert.rejects(api.devboxes.executeSync(id, { command: 'true' }), (e: { status?: number }) => e.status === 404);
    }
    const listed = [];
    for await (const d of api.devboxes.list({ limit: 100 })) listed.push(d.id);
    assert.ok(!listed.some((id) => pooled.includes(id)));
    const named = await api.devboxes.createAndAwaitRunning({ name: 'my-host' });
    assert.ok(!pooled.includes(named.id), 'its hostname is its own, set at boot');
    assert.equal((await runInBox(api, named.id, 'hostname')).out, 'my-host\n');
    await api.devboxes.shutdown(named.id);
  });

  test('a burst takes the pool and boots the rest cold; the pool fills again with new boxes, never an ended one', async () => {
    const pooled = await full();
    const burst = await Promise.all(Array.from({ length: POOL + 2 }, () => api.devboxes.createAndAwaitRunning({})));
    assert.equal(burst.filter((d) => pooled.includes(d.id)).length, POOL);
    await Promise.all(burst.map((d) => runInBox(api, d.id, 'touch /tmp/mine').then(() => api.devboxes.shutdown(d.id))));
    const again = await full();
    assert.ok(!again.some((id) => burst.some((d) => d.id === id) || pooled.includes(id)));
  });

  test('pooled boxes are adopted after a restart and a create still takes one', async () => {
    const pooled = await full();
    await s.restart();
    api = s.client();
    await until('the same boxes ready again', ready, (ids) => ids.length === POOL && pooled.every((id) => ids.includes(id)));
    const d = await api.devboxes.createAndAwaitRunning({});
    assert.ok(pooled.includes(d.id));
    assert.equal((await runInBox(api, d.id, 'echo ok')).out, 'ok\n');
    await api.devboxes.shutdown(d.id);
  });

  test('a drain ends the pooled boxes (nothing of a tenant is in them to suspend) and suspends a tenant box; the pool fills again after', async () => {
    const pooled = await full();
    const mine = await api.devboxes.createAndAwaitRunning({});
    assert.ok(pooled.includes(mine.id));
    const left = (await full()).filter((id) => id !== mine.id);
    const { stdout } = await promisify(execFile)(process.execPath, [DEVBOXD_BIN, 'drain', '--grace-seconds', '0'], {
      cwd: ROOT,
      env: { ...process.env, DEVBOXD_DATA_DIR: s.dataDir, DEVBOXD_LOG_LEVEL: 'silent' },
    });
    assert.deepEqual(
      stdout.split('\n').filter((l) => l.includes('\t')),
      [`${mine.id}\tsuspended`],
      'the one tenant box, suspended; no pooled box among them',
    );
    assert.match(stdout, /drained: 1 devboxes suspended, 0 not/);
    const again = await full();
    assert.ok(!again.some((id) => left.includes(id)), 'the pooled boxes before the drain ended');
    assert.equal((await api.devboxes.retrieve(mine.id)).status, 'suspended');
  });

  test("a public blueprint's pool: a create from it takes a box with the blueprint's files and runs its launch commands once", async () => {
    const b = await api.blueprints.create({
      name: 'pooled-bp',
      dockerfile: 'FROM runloop:runloop/starter-x86_64\nRUN echo built > /opt/built.txt',
      launch_parameters: { launch_commands: ['echo ran >> /tmp/launch.log'] },
    });
    let built = await api.blueprints.retrieve(b.id);
    while (built.status !== 'build_complete' && built.status !== 'failed') {
      await new Promise((r) => setTimeout(r, 200));
      built = await api.blueprints.retrieve(b.id);
    }
    assert.equal(built.status, 'build_complete');
    // Private, it cannot have a pool (its boxes would boot under no account); public, it can.
    assert.throws(() => poolsCli(cli(), 'set', 'SMALL', '1', '--blueprint', b.id), /is private/);
    const cliEnv = { ...process.env, DEVBOXD_DATA_DIR: s.dataDir, DEVBOXD_LOG_LEVEL: 'silent' };
    await promisify(execFile)(process.execPath, [DEVBOXD_BIN, 'blueprints', 'publish', b.id], { cwd: ROOT, env: cliEnv });
    poolsCli(cli(), 'set', 'SMALL', '1', '--blueprint', b.id);
    const listed = () =>
      (JSON.parse(poolsCli(cli(), 'list', '--json')) as PoolsListed).ready.filter((r) => r.pool === `${b.id}/SMALL`).flatMap((r) => r.devbox_ids);
    const pooled = await until("the blueprint's pool is full", listed, (ids) => ids.length === 1);
    const d = await api.devboxes.createAndAwaitRunning({ blueprint_id: b.id });
    assert.deepEqual([d.id], pooled, 'the create took the pooled box');
    const r = await runInBox(api, d.id, 'cat /opt/built.txt /tmp/launch.log');
    assert.equal(r.out, 'built\nran\n', "the blueprint's files, and its launch command run once, at the take");
    // A create from the default image does not take the blueprint's box, nor the reverse.
    const plain = await api.devboxes.createAndAwaitRunning({});
    assert.ok(!pooled.includes(plain.id));
    poolsCli(cli(), 'set', 'SMALL', '0', '--blueprint', b.id);
    await Promise.all([api.devboxes.shutdown(d.id), api.devboxes.shutdown(plain.id)]);
  });
});
