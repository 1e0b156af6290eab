import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SqlNodeStore } from '../../src/resources/nodes/index.js';
import { holdPostgres, openPostgres, openSqlite, type Backend } from './fixtures.js';

// The node registry's rows on both dialects: one server of two declares a node lost, a node that registers
// again while a declaration is under way waits for it, and renewals keep an operator's drain.
after(holdPostgres());

const GiB = 1024 ** 3;
const row = (name: string, leaseExpiresMs: number) => ({
  name,
  address: null,
  apiUrl: null,
  capacity: { cpuCores: 1.5, memoryBytes: 4 * GiB, diskBytes: 50 * GiB },
  heartbeatMs: leaseExpiresMs - 3000,
  leaseExpiresMs,
  graceMs: 1000,
  startedAtMs: 1,
  version: 'test',
});

for (const open of [openSqlite, openPostgres]) {
  describe(`node registry: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('of two servers declaring one silent node lost at once, exactly one wins; a stopped node is never overdue', async () => {
      await ready;
      const [a, b] = [new SqlNodeStore(db.a.db), new SqlNodeStore(db.b.db)];
      for (let round = 0; round < 5; round++) {
        const name = `silent-${round}`;
        const n = await a.register(row(name, 10_000));
        assert.deepEqual(n.capacity, { cpuCores: 1.5, memoryBytes: 4 * GiB, diskBytes: 50 * GiB });
        assert.equal(await a.markLost(name, 11_000), false, 'within its grace');
        const won = await Promise.all([a.markLost(name, 11_001), b.markLost(name, 11_001)]);
        assert.equal(won.filter(Boolean).length, 1);
        assert.deepEqual([(await b.get(name))!.state, (await b.get(name))!.lostAtMs], ['lost', 11_001]);
      }
      await a.register(row('resting', 10_000));
      await a.stopped('resting', 9000);
      assert.deepEqual(
        (await b.overdue(99_000)).map((n) => n.name),
        [],
      );
      assert.equal(await b.markLost('resting', 99_000), false);
    });

    test('a lost node renewing or registering is active again; a draining one stays draining', async () => {
      await ready;
      const s = new SqlNodeStore(db.a.db);
      await s.register(row('back', 10_000));
      assert.equal(await s.markLost('back', 20_000), true);
      const renewed = (await s.renew('back', 30_000, 33_000))!;
      assert.deepEqual([renewed.state, renewed.lostAtMs, renewed.leaseExpiresMs], ['active', null, 33_000]);
      assert.equal((await s.setState('back', ['active'], 'draining'))?.state, 'draining');
      assert.equal((await s.renew('back', 31_000, 34_000))!.state, 'draining');
      assert.equal((await s.register(row('back', 40_000))).state, 'draining', 'a restart keeps the drain');
      assert.equal(await s.setState('back', ['lost'], 'active'), undefined, 'a conditional change from a state it is not in does nothing');
      assert.equal(await s.renew('nobody', 1, 2), undefined);
    });

    if (open === openPostgres) {
      test('a node registering again while another server declares it lost waits, then sees the declaration', async () => {
        await ready;
        const [a, b] = [new SqlNodeStore(db.a.db), new SqlNodeStore(db.b.db)];
        await a.register(row('returning', 10_000));
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        let marked!: () => void;
        const isMarked = new Promise<void>((r) => (marked = r));
        const declaring = db.a.transaction(async (tx) => {
          assert.equal(await new SqlNodeStore(tx.db).markLost('returning', 20_000), true);
          marked();
          await held;
        });
        await isMarked;
        let registered = false;
        const registering = b.register(row('returning', 30_000)).then((n) => ((registered = true), n));
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(registered, false, 'the registration waits for the declaration to commit');
        release();
        await declaring;
        const n = await registering;
        assert.deepEqual([n.state, n.leaseExpiresMs], ['active', 30_000]);
      });
    }
  });
}
