import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { AuditRecord } from '../../src/resources/audit/index.js';
import { SqlAuditStore } from '../../src/resources/audit/index.js';
import { account, holdPostgres, openPostgres, openSqlite, type Backend } from './fixtures.js';

// The store contract of the audit module (schema.ts) on both dialects: two servers append to one table at
// once and every row lands; the filters of `devboxd audit` read the same on both (the route match ignores
// case and takes `_` and `%` literally); two servers pruning at once delete exactly the rows past the cut.
after(holdPostgres());

const row = (over: Partial<AuditRecord>): AuditRecord => ({
  timeMs: 1_000,
  node: 'n1',
  accountId: null,
  keyId: null,
  keyLast4: null,
  method: 'POST',
  route: '/v1/devboxes',
  resourceId: null,
  answerId: null,
  status: 200,
  durationMs: 3,
  ip: '192.0.2.1',
  forwardedFor: null,
  peer: null,
  userAgent: 'ua',
  reqId: 'req-1',
  ...over,
});

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract, audit: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('two servers append at once; the filters find rows by account, key, route, resource, time and status', async () => {
      await ready;
      const acc = await account(db.a);
      const [a, b] = [new SqlAuditStore(db.a.db), new SqlAuditStore(db.b.db)];
      const batch = (node: string, n: number) =>
        Array.from({ length: n }, (_, i) => row({ node, timeMs: 10_000 + i, accountId: acc.id, keyId: `key_${node}`, resourceId: `dbx_${i}` }));
      await Promise.all([a.insert(batch('a', 70)), b.insert(batch('b', 37)), a.insert(batch('a', 5)), b.insert(batch('b', 1))]);
      assert.equal((await a.list({ limit: 1000, accountId: acc.id })).length, 113);
      const mine = await b.list({ limit: 1000, accountId: acc.id, keyId: 'key_b' });
      assert.equal(mine.length, 38);
      assert.equal(mine[0]!.accountName, acc.name);
      assert.deepEqual(
        mine.map((r) => r.timeMs),
        [...mine.map((r) => r.timeMs)].sort((x, y) => y - x),
      );
      await a.insert([
        row({ timeMs: 20_000, route: '/v1/devboxes/:id/snapshot_disk', resourceId: 'dbx_s', answerId: 'snp_1', status: 200 }),
        row({ timeMs: 20_001, route: '/v1/devboxes/:id/shutdown', resourceId: 'dbx_s', status: 404, keyLast4: 'Zq9w' }),
        row({ timeMs: 20_002, route: '/v1/network-policies', status: 401, forwardedFor: '198.51.100.7', peer: '10.0.0.2' }),
      ]);
      assert.deepEqual(
        (await b.list({ limit: 10, resourceId: 'snp_1' })).map((r) => r.route),
        ['/v1/devboxes/:id/snapshot_disk'],
      );
      assert.equal((await b.list({ limit: 10, resourceId: 'dbx_s' })).length, 2);
      assert.deepEqual(
        (await b.list({ limit: 10, route: 'post /V1/DEVBOXES/:ID/SHUT' })).map((r) => [r.status, r.keyLast4]),
        [[404, 'Zq9w']],
      );
      assert.equal((await b.list({ limit: 10, route: 'snapshot_disk' })).length, 1);
      assert.equal((await b.list({ limit: 10, route: 'snapshot%disk' })).length, 0);
      assert.equal((await b.list({ limit: 10, route: 'network_policies' })).length, 0);
      assert.deepEqual(
        (await b.list({ limit: 10, status: { min: 400, max: 499 } })).map((r) => [r.status, r.forwardedFor, r.peer]),
        [
          [401, '198.51.100.7', '10.0.0.2'],
          [404, null, null],
        ],
      );
      assert.equal((await b.list({ limit: 1000, sinceMs: 10_010, untilMs: 10_020 })).length, 20);
      assert.equal((await b.list({ limit: 3 })).length, 3);
    });

    test('two servers pruning at once delete the rows past the cut and no other', async () => {
      await ready;
      const [a, b] = [new SqlAuditStore(db.a.db), new SqlAuditStore(db.b.db)];
      const before = (await a.list({ limit: 100_000 })).length;
      await a.insert(Array.from({ length: 300 }, (_, i) => row({ timeMs: 100 + i, route: '/v1/old' })));
      const drain = async (s: SqlAuditStore) => {
        let n = 0;
        for (let k; (k = await s.prune(400, 50)) > 0; ) n += k;
        return n;
      };
      const [na, nb] = await Promise.all([drain(a), drain(b)]);
      assert.equal(na + nb, 300);
      assert.equal((await b.list({ limit: 100_000 })).length, before);
    });
  });
}
