import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { account, devbox, key, openPostgres, openSqlite, holdPostgres, type Backend } from './fixtures.js';

// The store contract, part two (see contract.test.ts): accounts and keys, x-request-id claims, the schema guard.
after(holdPostgres());

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract, accounts and claims: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('accounts and keys: lookups by hash and name, listing skips revoked keys, a revocation happens once', async () => {
      await ready;
      const acc = await account(db.a);
      assert.deepEqual(await db.b.accounts.findAccountByName(acc.name), acc);
      const k1 = key(acc.id, { kind: 'restricted', scopes: [{ resourceType: 'RESOURCE_TYPE_DEVBOX', accessLevel: 'read' }], expiresAtMs: 9e12 });
      const k2 = key(acc.id);
      await db.a.accounts.insertKey(k1);
      await db.a.accounts.insertKey(k2);
      assert.deepEqual(await db.b.accounts.findKeyByHash(k1.secretHash), k1);
      assert.ok((await db.b.accounts.countKeys()) >= 2);
      assert.equal(await db.a.accounts.revokeKey(k1.id, 77), true);
      assert.equal(await db.b.accounts.revokeKey(k1.id, 88), false);
      assert.equal((await db.a.accounts.getKey(k1.id))!.revokedAtMs, 77);
      const page = await db.a.accounts.listKeys(acc.id, { limit: 10, includeTotalCount: true });
      assert.deepEqual(
        page.items.map((k) => k.id),
        [k2.id],
      );
      assert.equal(page.totalCount, 1);
    });

    test("a box read with its key (getWithKey): the key by hash, the box only in the key's account", async () => {
      await ready;
      const acc = await account(db.a);
      const other = await account(db.a);
      const k = key(acc.id, { kind: 'restricted', scopes: [{ resourceType: 'RESOURCE_TYPE_DEVBOXES', accessLevel: 'read' }], expiresAtMs: 9e12 });
      await db.a.accounts.insertKey(k);
      const mine = devbox(acc.id);
      const theirs = devbox(other.id);
      await db.a.devboxes.insert(mine);
      await db.a.devboxes.insert(theirs);
      assert.deepEqual(await db.b.devboxes.getWithKey(k.secretHash, mine.id), { key: k, devbox: mine });
      assert.deepEqual(await db.b.devboxes.getWithKey(k.secretHash, theirs.id), { key: k, devbox: undefined });
      assert.deepEqual(await db.b.devboxes.getWithKey(k.secretHash, 'dbx_none'), { key: k, devbox: undefined });
      assert.deepEqual(await db.b.devboxes.getWithKey('no-such-hash', mine.id), {});
      await db.a.accounts.revokeKey(k.id, 99);
      assert.deepEqual(await db.b.devboxes.getWithKey(k.secretHash, mine.id), { key: { ...k, revokedAtMs: 99 }, devbox: mine });
    });

    describe('x-request-id claims', () => {
      let n = 0;
      const newKey = () => ({ accountId: 'acc_1', requestId: `req-${++n}-${Math.random()}`, route: 'POST /v1/devboxes' });
      const NOW = 1_000_000;
      const LEASE = NOW + 15_000;
      const SINCE = NOW - 600_000;

      test('one owner per key across connections; the other sees it in flight, then the stored answer', async () => {
        await ready;
        const [a, b] = [db.a.idempotency, db.b.idempotency];
        const k = newKey();
        const claims = await Promise.all([a.claim(k, 'h1', 'server-a', NOW, LEASE, SINCE), b.claim(k, 'h1', 'server-b', NOW, LEASE, SINCE)]);
        assert.deepEqual(claims.map((c) => c.kind).sort(), ['in_flight', 'owner']);
        const [owner, other, ownerName] = claims[0]!.kind === 'owner' ? [a, b, 'server-a'] : [b, a, 'server-b'];
        await other.complete(k, 'stranger', { status: 200, body: '{"id":"wrong"}' });
        assert.equal((await other.claim(k, 'h1', 'server-c', NOW, LEASE, SINCE)).kind, 'in_flight');
        await owner.complete(k, ownerName, { status: 200, body: '{"id":"dbx_1"}' });
        assert.deepEqual(await other.claim(k, 'h1', 'server-c', Date.now(), Date.now() + 15_000, Date.now() - 600_000), {
          kind: 'done',
          requestHash: 'h1',
          response: { status: 200, body: '{"id":"dbx_1"}' },
        });
      });

      test('a released key is claimed afresh; another hash is reported, not replaced', async () => {
        await ready;
        const [a, b] = [db.a.idempotency, db.b.idempotency];
        const k = newKey();
        await a.claim(k, 'h1', 'server-a', NOW, LEASE, SINCE);
        assert.deepEqual(await b.claim(k, 'h2', 'server-b', NOW, LEASE, SINCE), { kind: 'in_flight', requestHash: 'h1' });
        await a.release(k, 'server-a');
        assert.deepEqual(await b.claim(k, 'h2', 'server-b', NOW, LEASE, SINCE), { kind: 'owner' });
      });

      test('a lapsed lease is taken over once, and the old owner can neither renew nor answer', async () => {
        await ready;
        const [a, b] = [db.a.idempotency, db.b.idempotency];
        const k = newKey();
        await a.claim(k, 'h1', 'server-a', NOW, LEASE, SINCE);
        assert.equal(await a.renew(k, 'server-a', LEASE + 5_000), true);
        const later = LEASE + 5_001;
        assert.deepEqual(await b.claim(k, 'h1', 'server-b', later, later + 15_000, SINCE), { kind: 'owner' });
        assert.equal((await a.claim(k, 'h1', 'server-c', later, later + 15_000, SINCE)).kind, 'in_flight');
        assert.equal(await a.renew(k, 'server-a', later + 30_000), false);
        await a.complete(k, 'server-a', { status: 200, body: 'stale' });
        await a.release(k, 'server-a');
        await b.complete(k, 'server-b', { status: 201, body: 'fresh' });
        const done = await a.claim(k, 'h1', 'server-c', Date.now(), Date.now() + 15_000, Date.now() - 600_000);
        assert.deepEqual(done, { kind: 'done', requestHash: 'h1', response: { status: 201, body: 'fresh' } });
      });

      test("an old answer is claimed afresh; voidInFlight drops only this node's markers, never answers", async () => {
        await ready;
        const [a, b] = [db.a.idempotency, db.b.idempotency];
        const old = newKey();
        await a.claim(old, 'h1', 'node-a:1:x', NOW, LEASE, SINCE);
        await a.complete(old, 'node-a:1:x', { status: 200, body: 'old' });
        const farLater = Date.now() + 700_000;
        assert.deepEqual(await b.claim(old, 'h9', 'node-b:1:y', farLater, farLater + 15_000, farLater - 600_000), { kind: 'owner' });
        await b.release(old, 'node-b:1:y');

        const answered = newKey();
        await a.claim(answered, 'h1', 'node-a:1:x', NOW, LEASE, SINCE);
        await a.complete(answered, 'node-a:1:x', { status: 200, body: 'kept' });
        const mine = newKey();
        await a.claim(mine, 'h1', 'node-a:2:x', NOW, Date.now() + 60_000, SINCE);
        const theirs = newKey();
        await a.claim(theirs, 'h1', 'node-ab:2:x', NOW, Date.now() + 60_000, SINCE);
        assert.ok((await b.voidInFlight('node-a:')) >= 1);
        assert.deepEqual(await b.claim(mine, 'h1', 'node-b:1:y', NOW, LEASE, SINCE), { kind: 'owner' });
        assert.equal((await b.claim(theirs, 'h1', 'node-b:1:y', NOW, LEASE, SINCE)).kind, 'in_flight', 'another node keeps its marker');
        assert.equal((await b.claim(answered, 'h1', 'node-b:1:y', Date.now(), Date.now() + 15_000, Date.now() - 600_000)).kind, 'done');
      });
    });

    test('a database migrated by a newer devboxd is refused', async () => {
      await ready;
      await db.raw(db.name === 'sqlite' ? 'PRAGMA user_version = 999' : 'INSERT INTO schema_migrations (version, applied_at_ms) VALUES (999, 0)');
      await assert.rejects(db.reopen(), /migrated by a newer devboxd \(schema v999, this devboxd knows up to v\d+\): run that devboxd/);
    });
  });
}
