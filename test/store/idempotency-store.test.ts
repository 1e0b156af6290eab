import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase, type Db } from '../../src/store/sqlite/db.js';
import { SqliteIdempotencyStore } from '../../src/store/sqlite/idempotency-store.js';

// Two connections to one database file stand for two server processes sharing it.
let dir: string;
let dbs: Db[];
let a: SqliteIdempotencyStore;
let b: SqliteIdempotencyStore;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-idem-'));
  dbs = [openDatabase(dir), openDatabase(dir)];
  a = new SqliteIdempotencyStore(dbs[0]!);
  b = new SqliteIdempotencyStore(dbs[1]!);
});
after(() => {
  for (const db of dbs) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

let n = 0;
const newKey = () => ({ accountId: 'acc_1', requestId: `req-${++n}`, route: 'POST /v1/devboxes' });
const NOW = 1_000_000;
const LEASE = NOW + 15_000;
const SINCE = NOW - 600_000;

test('one owner per key across connections; the other sees it in flight, then the stored answer', async () => {
  const key = newKey();
  assert.deepEqual(await a.claim(key, 'h1', 'server-a', NOW, LEASE, SINCE), { kind: 'owner' });
  assert.deepEqual(await b.claim(key, 'h1', 'server-b', NOW, LEASE, SINCE), { kind: 'in_flight', requestHash: 'h1' });
  // Only the owner may answer: a stranger's complete changes nothing.
  await b.complete(key, 'server-b', { status: 200, body: '{"id":"wrong"}' });
  assert.equal((await b.claim(key, 'h1', 'server-b', NOW, LEASE, SINCE)).kind, 'in_flight');
  await a.complete(key, 'server-a', { status: 200, body: '{"id":"dbx_1"}' });
  assert.deepEqual(await b.claim(key, 'h1', 'server-b', Date.now(), Date.now() + 15_000, Date.now() - 600_000), {
    kind: 'done',
    requestHash: 'h1',
    response: { status: 200, body: '{"id":"dbx_1"}' },
  });
});

test('a released key is claimed afresh; another hash is reported, not replaced', async () => {
  const key = newKey();
  await a.claim(key, 'h1', 'server-a', NOW, LEASE, SINCE);
  assert.deepEqual(await b.claim(key, 'h2', 'server-b', NOW, LEASE, SINCE), { kind: 'in_flight', requestHash: 'h1' });
  await a.release(key, 'server-a');
  assert.deepEqual(await b.claim(key, 'h2', 'server-b', NOW, LEASE, SINCE), { kind: 'owner' });
});

test('a lapsed lease is taken over once, and the old owner can neither renew nor answer', async () => {
  const key = newKey();
  await a.claim(key, 'h1', 'server-a', NOW, LEASE, SINCE);
  assert.equal(await a.renew(key, 'server-a', LEASE + 5_000), true);
  const later = LEASE + 5_001;
  assert.deepEqual(await b.claim(key, 'h1', 'server-b', later, later + 15_000, SINCE), { kind: 'owner' });
  assert.equal((await a.claim(key, 'h1', 'server-c', later, later + 15_000, SINCE)).kind, 'in_flight');
  assert.equal(await a.renew(key, 'server-a', later + 30_000), false);
  await a.complete(key, 'server-a', { status: 200, body: 'stale' });
  await a.release(key, 'server-a');
  await b.complete(key, 'server-b', { status: 201, body: 'fresh' });
  const done = await a.claim(key, 'h1', 'server-c', Date.now(), Date.now() + 15_000, Date.now() - 600_000);
  assert.deepEqual(done, { kind: 'done', requestHash: 'h1', response: { status: 201, body: 'fresh' } });
});

test('an answer older than the window is claimed afresh; voidInFlight drops markers, not answers', async () => {
  const old = newKey();
  await a.claim(old, 'h1', 'server-a', NOW, LEASE, SINCE);
  await a.complete(old, 'server-a', { status: 200, body: 'old' });
  const farLater = Date.now() + 700_000;
  assert.deepEqual(await b.claim(old, 'h9', 'server-b', farLater, farLater + 15_000, farLater - 600_000), { kind: 'owner' });

  const answered = newKey();
  await a.claim(answered, 'h1', 'server-a', NOW, LEASE, SINCE);
  await a.complete(answered, 'server-a', { status: 200, body: 'kept' });
  const pending = newKey();
  await a.claim(pending, 'h1', 'server-a', NOW, Date.now() + 60_000, SINCE);
  assert.ok((await b.voidInFlight()) >= 2);
  assert.deepEqual(await b.claim(pending, 'h1', 'server-b', NOW, LEASE, SINCE), { kind: 'owner' });
  assert.equal((await b.claim(answered, 'h1', 'server-b', Date.now(), Date.now() + 15_000, Date.now() - 600_000)).kind, 'done');
});
