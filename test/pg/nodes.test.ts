import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sharedTestDatabase, startTestServer, type TestServer, DEVBOXD_BIN } from '../helpers/server.js';

// Two servers (own data dirs, own node names) on one PostgreSQL database: each sees every box, and each
// reconciles only its own, so a crash and restart of one leaves the other's boxes running. Without API
// addresses, neither forwards to the other.
let db: { url: string; release(): Promise<void> };
let a: TestServer;
let b: TestServer;

before(async () => {
  db = await sharedTestDatabase();
  // One after the other: the first start creates the default account both admin keys belong to.
  a = await startTestServer({ DEVBOXD_DATABASE_URL: db.url, DEVBOXD_NODE_NAME: 'node-a' });
  b = await startTestServer({ DEVBOXD_DATABASE_URL: db.url, DEVBOXD_NODE_NAME: 'node-b' });
});
after(async () => {
  await a?.stop();
  await b?.stop();
  await db?.release();
});

async function echo(server: TestServer, id: string, text: string): Promise<string> {
  const r = await server.client().devboxes.executeSync(id, { command: `echo ${text}` });
  return (r.stdout ?? '').trim();
}

test("each lists the other's boxes; a kill -9 and restart of one re-adopts its own and leaves the other's alone", async () => {
  const onA = await a.client().devboxes.createAndAwaitRunning({ name: 'on-a' });
  const onB = await b.client().devboxes.createAndAwaitRunning({ name: 'on-b' });
  for (const server of [a, b]) {
    const ids = [];
    for await (const d of server.client().devboxes.list({ limit: 100 })) ids.push(d.id);
    assert.ok(ids.includes(onA.id) && ids.includes(onB.id), 'both boxes are listed by both servers');
    assert.equal((await server.client().devboxes.retrieve(onB.id)).status, 'running');
  }

  await a.restart(); // SIGKILL, then start again on the same data dir and node name
  assert.equal((await a.client().devboxes.retrieve(onA.id)).status, 'running', 'node-a re-adopted its box');
  assert.equal(await echo(a, onA.id, 'still-here'), 'still-here');
  const other = await b.client().devboxes.retrieve(onB.id);
  assert.equal(other.status, 'running', "node-a's restart left node-b's box running");
  assert.deepEqual(
    other.state_transitions.map((t) => t.status),
    ['provisioning', 'initializing', 'running'],
  );
  assert.equal(await echo(b, onB.id, 'untouched'), 'untouched');

  await b.restart();
  assert.equal((await a.client().devboxes.retrieve(onA.id)).status, 'running', "node-b's restart left node-a's box running");
  assert.equal(await echo(b, onB.id, 'again'), 'again');

  // Neither server has an API address others reach it at (DEVBOXD_API_URL): each places its creates on
  // itself, and a request for the other's box is answered 503, naming why, rather than forwarded
  // (test/pg/routing.test.ts forwards them).
  const refused = await a
    .client({ maxRetries: 0 })
    .devboxes.shutdown(onB.id)
    .then(
      () => assert.fail('served a box of another node'),
      (err: { status?: number; message?: string }) => err,
    );
  assert.equal(refused.status, 503);
  assert.match(refused.message ?? '', /is on node node-b, which this server cannot reach now: node node-b has no API address/);
  assert.equal((await b.client().devboxes.shutdown(onB.id)).status, 'shutdown');
  assert.equal((await a.client().devboxes.shutdown(onA.id)).status, 'shutdown');
});

test('the operator CLI works against PostgreSQL, and a key it makes works on every server sharing it', async () => {
  const cli = (...args: string[]) =>
    execFileSync(process.execPath, [DEVBOXD_BIN, ...args], {
      // No data dir of a server: the database URL alone says where the accounts are.
      env: { ...process.env, DEVBOXD_DATA_DIR: path.join(os.tmpdir(), 'devboxd-cli-unused'), DEVBOXD_DATABASE_URL: db.url },
      stdio: 'pipe',
    }).toString();
  const secret = cli('accounts', 'create', 'pg-team').trim().split('\n').at(-1)!;
  assert.match(secret, /^ak_/);
  for (const server of [a, b]) assert.equal((await server.client({ apiKey: secret }).accounts.me()).name, 'pg-team');
  const second = cli('keys', 'create', 'pg-team').trim().split('\n').at(-1)!;
  const listed = cli('keys', 'list', 'pg-team');
  assert.equal(listed.trim().split('\n').length, 3, `a header and two keys:\n${listed}`);
  const id = listed
    .split('\n')
    .find((l) => l.includes(`\t${second.slice(-4)}\t`))!
    .split('\t')[0]!;
  assert.match(cli('keys', 'revoke', id), new RegExp(`revoked key ${id} of pg-team`));
  const refused = await b
    .client({ apiKey: second, maxRetries: 0 })
    .accounts.me()
    .then(
      () => 200,
      (err: { status?: number }) => err.status,
    );
  assert.equal(refused, 401);
});
