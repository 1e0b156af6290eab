/**
 * `devboxd backup` and `devboxd restore` (issue 29, item 2) on real servers. SQLite: a server filled through the
 * SDK (an account and its key, a secret, a snapshot of a box with a file in it, a blueprint, an object, an
 * axon with events and a SQL table) is backed up while a box writes files in a loop, restored into a new data
 * dir and served again: the SDK finds all of it with the same key, a box from the restored snapshot has the
 * file and gets the secret, a box from the blueprint has what its build wrote, a box suspended before the
 * backup resumes with its files, and the box that was running ended with a reason naming the backup. Also: no master key in a backup made without --with-master-key, a
 * restore without the key refused naming it, a non-empty data dir refused. PostgreSQL: pg_dump while the
 * server runs, restored into an empty database, and a database that is not empty refused.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { DEVBOXD_BIN, ROOT, runInBox, startTestServer, type TestServer } from '../helpers/server.js';

const SECRET = 'restored-secret-value';
const LAUNCH = { resource_size_request: 'X_SMALL', custom_disk_size: 1 } as const;
let servers: TestServer[] = [];
/** Boxes of accounts other than the admin's: a test server's stop shuts down the admin's only, and a box outlives its server. */
let boxes: { api: ReturnType<TestServer['client']>; id: string }[] = [];
let work: string;

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-backup-'));
});
after(async () => {
  await stopAll();
  removeDir(work);
});

async function stopAll(): Promise<void> {
  await Promise.all(boxes.map(({ api, id }) => api.devboxes.shutdown(id).catch(() => undefined)));
  boxes = [];
  await Promise.all(servers.map((s) => s.stop().catch(() => undefined)));
  servers = [];
}

/** Removes a restored data dir its stopped server may have left pool disks mounted in. */
function removeDir(dir: string): void {
  const mounts = fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(`${dir}/`));
  for (const m of mounts.sort().reverse()) spawnSync('umount', ['-l', m]);
  fs.rmSync(dir, { recursive: true, force: true });
}

/** `devboxd ARGS` with the server's settings `env`: its exit status and what it printed. */
function cli(env: Record<string, string>, ...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [DEVBOXD_BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, DEVBOXD_LOG_LEVEL: 'warn', DEVBOXD_IMAGE_DIR: path.join(ROOT, 'data/images'), ...env },
  });
  return { code: r.status, out: r.stdout.toString(), err: r.stderr.toString() };
}

async function serve(env: Record<string, string> = {}): Promise<TestServer> {
  const s = await startTestServer(env);
  servers.push(s);
  return s;
}

const manifestOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));

describe('SQLite: a backup while a box works, restored into a new data dir', () => {
  test('every record comes back and the restored server serves it with the same key', async () => {
    const a = await serve();
    const made = cli({ DEVBOXD_DATA_DIR: a.dataDir }, 'accounts', 'create', 'team');
    assert.equal(made.code, 0, made.err);
    const key = made.out.trim().split('\n').at(-1)!;
    const sdk = a.sdk({ apiKey: key });
    const api = a.client({ apiKey: key });

    await sdk.secret.create({ name: 'TOKEN', value: SECRET });
    const [box, blueprint, asleep] = await Promise.all([
      sdk.devbox.create({ launch_parameters: LAUNCH }),
      api.blueprints.createAndAwaitBuildCompleted({ name: 'bp', dockerfile: 'FROM runloop:runloop/starter-x86_64\nRUN echo built > /opt/bp.txt' }),
      // A suspended box: its disk is a layer, so it resumes after the restore.
      sdk.devbox.create({ launch_parameters: LAUNCH }).then(async (d) => {
        await d.file.write({ file_path: '/home/user/asleep.txt', contents: 'suspended with me' });
        await d.suspend();
        await d.awaitSuspended();
        return d;
      }),
    ]);
    boxes.push({ api, id: box.id });
    assert.equal(blueprint.status, 'build_complete');
    await box.file.write({ file_path: '/home/user/kept.txt', contents: 'kept in the snapshot' });
    const snapshot = await box.snapshotDisk({ name: 'kept' });
    const object = await sdk.storageObject.create({ name: 'obj', content_type: 'text' });
    await object.uploadContent('object body');
    await object.complete();
    const axon = await sdk.axon.create({ name: 'events' });
    for (const i of [1, 2, 3]) await axon.publish({ event_type: 'tick', origin: 'USER_EVENT', payload: JSON.stringify({ i }), source: 'backup-test' });
    await api.axons.sql.batch(axon.id, { statements: [{ sql: 'CREATE TABLE t (x)' }, { sql: "INSERT INTO t VALUES ('row')" }] });

    // The workload: a box writing files all through the backup.
    await box.cmd.execAsync('i=0; while :; do echo $i > ~/w.$((i % 100)); echo $i >> ~/log; i=$((i + 1)); sleep 0.005; done');
    const count = async () => Number((await runInBox(api, box.id, 'wc -l < ~/log')).out);
    const counted = await count();
    const dest = path.join(work, 'backup');
    const started = Date.now();
    const backedUp = cli({ DEVBOXD_DATA_DIR: a.dataDir }, 'backup', dest);
    assert.equal(backedUp.code, 0, backedUp.err);
    assert.match(backedUp.out, /backup written to .* in [\d.]+ s: database \(sqlite\), \d+ layers/);
    assert.match(backedUp.out, /master key: not in the backup; restore needs key [0-9a-f]{16}/);
    const tookMs = Date.now() - started;
    assert.equal((await box.getInfo()).status, 'running', 'the box ran on through the backup');
    assert.ok((await count()) > counted, 'its loop went on');

    const m = manifestOf(dest);
    assert.ok(!fs.existsSync(`${dest}.tmp`));
    assert.ok(!fs.existsSync(path.join(dest, 'api/secret.key')), 'no master key without --with-master-key');
    assert.ok(!fs.existsSync(path.join(dest, 'api/admin-key')));
    assert.equal(m.database.kind, 'sqlite');
    assert.equal(m.database.schema.core, 9);
    assert.ok(m.layers.length >= 2, 'the snapshot and the blueprint');
    assert.ok(m.masterKey.keys.some((k: { sealed: number }) => k.sealed >= 1));
    assert.ok(m.entries.every((e: { sum: string }) => /^[0-9a-f]{64}$/.test(e.sum)));
    assert.ok(m.entries.some((e: { path: string }) => e.path.startsWith('api/axons/')));

    // Restores that are refused leave nothing behind.
    const target = path.join(work, 'restored');
    const keyless = cli({ DEVBOXD_DATA_DIR: target }, 'restore', dest);
    assert.equal(keyless.code, 1);
    assert.match(keyless.err, new RegExp(`would not open: 1 under master key ${m.masterKey.keys[0].id}; no key was given`));
    assert.ok(!fs.existsSync(target) && !fs.existsSync(`${target}.restoring`));
    const busy = cli({ DEVBOXD_DATA_DIR: a.dataDir }, 'restore', dest, '--key-file', path.join(a.apiDir, 'secret.key'));
    assert.equal(busy.code, 1);
    assert.match(busy.err, /the data dir .* is not empty .*restore goes into an empty one/);

    const restored = cli({ DEVBOXD_DATA_DIR: target }, 'restore', dest, '--key-file', path.join(a.apiDir, 'secret.key'));
    assert.equal(restored.code, 0, restored.err);
    assert.match(restored.out, /boxes that had a sandbox at the backup: 1, now failure/);
    const apiOwner = fs.statSync(a.apiDir);
    for (const f of ['api', 'api/devboxd.db', 'api/secret.key']) assert.equal(fs.statSync(path.join(target, f)).uid, apiOwner.uid, f);
    assert.equal(fs.statSync(path.join(target, 'layers')).uid, 0);

    const b = await serve({ DEVBOXD_DATA_DIR: target });
    const bsdk = b.sdk({ apiKey: key });
    const bapi = b.client({ apiKey: key });
    boxes.push({ api: bapi, id: asleep.id });
    const ended = await bapi.devboxes.retrieve(box.id);
    assert.equal(ended.status, 'failure');
    assert.match(ended.state_transitions.at(-1)?.failure_reason ?? '', /restored from the backup/);
    assert.equal((await bapi.devboxes.retrieve(asleep.id)).status, 'suspended');
    await bapi.devboxes.resume(asleep.id);
    await bapi.devboxes.awaitRunning(asleep.id);
    assert.equal((await runInBox(bapi, asleep.id, 'cat ~/asleep.txt')).out, 'suspended with me');
    assert.deepEqual(
      (await bapi.secrets.list()).secrets.map((s) => s.name),
      ['TOKEN'],
    );

    const [fromSnapshot, fromBlueprint] = await Promise.all([
      bsdk.devbox.createFromSnapshot(snapshot.id, { secrets: { T: 'TOKEN' }, launch_parameters: LAUNCH }),
      bsdk.devbox.createFromBlueprintId(blueprint.id, { launch_parameters: LAUNCH }),
    ]);
    boxes.push({ api: bapi, id: fromSnapshot.id }, { api: bapi, id: fromBlueprint.id });
    assert.equal((await runInBox(bapi, fromSnapshot.id, 'cat ~/kept.txt; echo; echo "$T"')).out, `kept in the snapshot\n${SECRET}\n`);
    assert.equal((await runInBox(bapi, fromBlueprint.id, 'cat /opt/bp.txt')).out, 'built\n');
    assert.equal(await (await bsdk.storageObject.fromId(object.id)).downloadAsText(), 'object body');
    const events = await bapi.axons.events.list(axon.id, { limit: 10 });
    assert.deepEqual(events.events.map((e) => JSON.parse(e.payload).i).sort(), [1, 2, 3]);
    assert.deepEqual((await bapi.axons.sql.query(axon.id, { sql: 'SELECT x FROM t' })).rows, [['row']]);
    console.log(`backup of ${m.entries.length} files beside a running box: ${tookMs} ms`);
  });
});

describe('PostgreSQL: pg_dump while the server runs, restored into an empty database', () => {
  let pg: TestPostgres;
  before(async () => {
    pg = await startTestPostgres();
  });
  after(async () => {
    await stopAll();
    await pg?.stop();
  });

  test('the records come back; a database that is not empty is refused', async () => {
    const [urlA, urlB] = [await pg.database(), await pg.database()];
    const a = await serve({ DEVBOXD_DATABASE_URL: urlA });
    const sdk = a.sdk();
    await sdk.secret.create({ name: 'PG_TOKEN', value: SECRET });
    const object = await sdk.storageObject.create({ name: 'pg-obj', content_type: 'text' });
    await object.uploadContent('pg object');
    await object.complete();
    const axon = await sdk.axon.create({ name: 'pg-events' });
    await axon.publish({ event_type: 'tick', origin: 'USER_EVENT', payload: '{}', source: 'backup-test' });

    const dest = path.join(work, 'pg-backup');
    const backedUp = cli({ DEVBOXD_DATA_DIR: a.dataDir, DEVBOXD_DATABASE_URL: urlA }, 'backup', dest, '--with-master-key');
    assert.equal(backedUp.code, 0, backedUp.err);
    assert.match(backedUp.out, /master key: IN the backup/);
    const m = manifestOf(dest);
    assert.equal(m.database.kind, 'postgres');
    assert.ok(fs.existsSync(path.join(dest, 'api/devboxd.pgdump')) && fs.existsSync(path.join(dest, 'api/secret.key')));

    const target = path.join(work, 'pg-restored');
    const taken = cli({ DEVBOXD_DATA_DIR: path.join(work, 'pg-other'), DEVBOXD_DATABASE_URL: urlA }, 'restore', dest);
    assert.equal(taken.code, 1);
    assert.match(taken.err, /holds tables already: restore goes into an empty database/);
    const restored = cli({ DEVBOXD_DATA_DIR: target, DEVBOXD_DATABASE_URL: urlB }, 'restore', dest);
    assert.equal(restored.code, 0, restored.err);
    assert.match(restored.out, /1 sealed values open under the restored key file/);

    const b = await serve({ DEVBOXD_DATA_DIR: target, DEVBOXD_DATABASE_URL: urlB });
    const bapi = b.client();
    assert.deepEqual(
      (await bapi.secrets.list()).secrets.map((s) => s.name),
      ['PG_TOKEN'],
    );
    assert.equal(await (await b.sdk().storageObject.fromId(object.id)).downloadAsText(), 'pg object');
    assert.equal((await bapi.axons.events.list(axon.id, { limit: 10 })).events.length, 1);
  });
});
