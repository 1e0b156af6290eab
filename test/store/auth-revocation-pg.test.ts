import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openStore } from '../../src/resources/core-store.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';

/**
 * On PostgreSQL every request reads its key, and the devbox reads (`overlapAuth` routes) run while it is
 * read, under the principal the key had last time (AccountService.hinted). A revocation must still hold
 * from the very next request: the answer waits for the key's check and is replaced by the refusal.
 */
let pg: TestPostgres;
let url: string;
let f: FastApp;
let boxId: string;
before(async () => {
  pg = await startTestPostgres();
  url = await pg.database();
  f = await buildFastApp({ env: { DEVBOXD_DATABASE_URL: url } });
  const created = await f.call({ method: 'POST', url: '/v1/devboxes', payload: {} });
  assert.equal(created.statusCode, 200, created.body);
  boxId = created.json().id;
});
after(async () => {
  await f?.close();
  await pg?.stop();
});

/** A fresh standard key that has read the box (so its principal is a hint), and its GET of the box and list. */
async function warmKey() {
  const me = await f.call({ method: 'GET', url: '/v1/accounts/me' });
  const { key, secret } = await f.deps.accounts.createKey(me.json().id, { kind: 'standard', name: 'victim' });
  const get = (u: string) => f.call({ method: 'GET', url: u, key: secret });
  for (let i = 0; i < 3; i++) assert.equal((await get(`/v1/devboxes/${boxId}`)).statusCode, 200);
  return { id: key.id, secret, get };
}

/** Counts the calls of `obj[name]` while `fn` runs. */
async function counting<T extends object>(obj: T, name: keyof T, fn: () => Promise<void>): Promise<number> {
  const original = obj[name] as (...a: unknown[]) => unknown;
  let calls = 0;
  (obj as Record<keyof T, unknown>)[name] = (...a: unknown[]) => {
    calls++;
    return original.apply(obj, a);
  };
  try {
    await fn();
  } finally {
    (obj as Record<keyof T, unknown>)[name] = original;
  }
  return calls;
}

test("every request reads its key, the hinted ones too: a GET of a box in the box's own statement", async () => {
  const { secret, get } = await warmKey();
  assert.ok(f.deps.accounts.hinted(secret), 'the key is a hint: reads overlap its check');
  const { accounts, devboxes } = f.deps.store;
  let joined = 0;
  let plain = 0;
  const byHash = await counting(accounts, 'findKeyByHash', async () => {
    joined = await counting(devboxes, 'getWithKey', async () => {
      plain = await counting(devboxes, 'get', async () => {
        for (let i = 0; i < 4; i++) assert.equal((await get(`/v1/devboxes/${boxId}`)).statusCode, 200);
        assert.equal((await get('/v1/devboxes')).statusCode, 200);
      });
    });
  });
  assert.deepEqual({ byHash, joined, plain }, { byHash: 1, joined: 4, plain: 0 }, 'the list reads its key on its own, each GET with the box');
});

test('revoked through the API: the next GET of a devbox and of the list is 401, with the refusal as the body', async () => {
  const { id, get } = await warmKey();
  assert.equal((await f.call({ method: 'POST', url: `/v1/apikeys/${id}/delete`, payload: {} })).statusCode, 200);
  const r = await get(`/v1/devboxes/${boxId}`);
  assert.equal(r.statusCode, 401);
  assert.deepEqual(r.json(), { message: 'API key has been revoked', error: 'unauthenticated' });
  assert.doesNotMatch(r.body, new RegExp(boxId), 'nothing of the box leaves');
  assert.equal((await get('/v1/devboxes')).statusCode, 401);
});

test('revoked through another connection to the database (another server): the next GET is 401', async () => {
  const { id, get } = await warmKey();
  const other = await openStore({ dataDir: f.dataDir, databaseUrl: url });
  try {
    assert.equal(await other.accounts.revokeKey(id, Date.now()), true);
  } finally {
    await other.close();
  }
  const r = await get(`/v1/devboxes/${boxId}`);
  assert.equal(r.statusCode, 401);
  assert.doesNotMatch(r.body, new RegExp(boxId));
  // Another account's box is a 404 whether or not the key is hinted; a revoked key stays 401 for it.
  assert.equal((await get('/v1/devboxes/dbx_nosuchbox')).statusCode, 401);
});

test('a hinted key of another account gets 404 for this box, and keeps working', async () => {
  const { secret } = await f.deps.accounts.createAccount('other');
  for (let i = 0; i < 3; i++) assert.equal((await f.call({ method: 'GET', url: `/v1/devboxes/${boxId}`, key: secret })).statusCode, 404);
});
