import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Job } from '../../src/platform/jobs/types.js';
import { newId } from '../../src/lib/ids.js';
import { openPostgres, openSqlite, rejectsWith, holdPostgres, type Backend } from './fixtures.js';

// The store contract, part three (see contract.test.ts): durable jobs, on both dialects.
after(holdPostgres());

const job = (over: Partial<Job> = {}): Job => ({
  id: newId('job'),
  kind: 'test.kind',
  subjectId: newId('sub'),
  state: 'pending',
  attempts: 0,
  lastError: null,
  runAfterMs: 1,
  node: 'node-a',
  createTimeMs: Date.now(),
  updateTimeMs: Date.now(),
  ...over,
});

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract, jobs: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('two servers claiming one pending job: exactly one gets it, and the attempt is counted once', async () => {
      await ready;
      for (let round = 0; round < 10; round++) {
        // A job from before node names is the one both may claim.
        const j = job({ node: '' });
        await db.a.jobs.insert(j);
        const [x, y] = await Promise.all([db.a.jobs.claim(j.id, 'node-a', 5), db.b.jobs.claim(j.id, 'node-b', 6)]);
        assert.equal([x, y].filter(Boolean).length, 1, 'exactly one claim applies');
        const now = (await db.a.jobs.get(j.id))!;
        assert.equal(now.state, 'running');
        assert.equal(now.attempts, 1);
        assert.equal(now.node, (x ?? y)!.node);
      }
    });

    test("a server never claims another node's job; a job from before node names is anyone's", async () => {
      await ready;
      const theirs = job({ node: 'node-a' });
      const legacy = job({ node: '' });
      await db.a.jobs.insert(theirs);
      await db.a.jobs.insert(legacy);
      assert.equal(await db.b.jobs.claim(theirs.id, 'node-b', 2), undefined, "node-b does not claim node-a's job");
      const after = (await db.a.jobs.get(theirs.id))!;
      assert.deepEqual([after.state, after.attempts, after.node], ['pending', 0, 'node-a'], 'the refused claim changes nothing');
      assert.equal((await db.a.jobs.claim(theirs.id, 'node-a', 3))?.state, 'running');
      const claimed = await db.b.jobs.claim(legacy.id, 'node-b', 4);
      assert.equal(claimed?.node, 'node-b', 'a legacy job becomes the claiming node’s');
    });

    test('one open job per kind and subject; a finished one does not count', async () => {
      await ready;
      const j = job();
      await db.a.jobs.insert(j);
      await rejectsWith(db.b.jobs.insert(job({ subjectId: j.subjectId })), 'conflict');
      await db.a.jobs.insert(job({ subjectId: j.subjectId, kind: 'other.kind' }));
      await db.a.jobs.claim(j.id, 'node-a', 2);
      assert.equal(await db.a.jobs.settle(j.id, 'succeeded', null, 3), true);
      assert.equal(await db.b.jobs.settle(j.id, 'failed', 'late', 4), false, 'a settled job stays as it was settled');
      await db.a.jobs.insert(job({ subjectId: j.subjectId }));
    });

    test('retry puts a running job back with its error and due time; a restart requeues only its own node', async () => {
      await ready;
      const mine = job({ node: 'node-r' });
      const legacy = job({ node: '' });
      const theirs = job({ node: 'node-s' });
      for (const j of [mine, legacy, theirs]) await db.a.jobs.insert(j);
      await db.a.jobs.claim(mine.id, 'node-r', 2);
      assert.equal(await db.a.jobs.retry(mine.id, 999, 'boom', 3), true);
      assert.deepEqual(
        { ...(await db.b.jobs.get(mine.id))!, updateTimeMs: 0 },
        { ...mine, state: 'pending', attempts: 1, lastError: 'boom', runAfterMs: 999, updateTimeMs: 0 },
      );
      await db.a.jobs.claim(mine.id, 'node-r', 4);
      await db.a.jobs.claim(theirs.id, 'node-s', 4);
      assert.equal(await db.b.jobs.requeueRunning('node-r', 5), 1);
      assert.equal((await db.b.jobs.get(theirs.id))!.state, 'running', "another node's running job is left alone");
      const open = (await db.b.jobs.listOpen('node-r')).map((j) => j.id);
      assert.ok(open.includes(mine.id) && open.includes(legacy.id) && !open.includes(theirs.id));
      await db.a.jobs.delete(legacy.id);
      assert.equal(await db.a.jobs.get(legacy.id), undefined);
    });

    test("a lost node's open job moves to one server or ends once, only while it is still open on that node", async () => {
      await ready;
      for (let round = 0; round < 5; round++) {
        const running = job({ node: 'node-lost', state: 'running', attempts: 1 });
        const pending = job({ node: 'node-lost' });
        await db.a.jobs.insert(running);
        await db.a.jobs.insert(pending);
        // Two servers move the same job at once: one wins, and the job is a pending one of the winner.
        const [x, y] = await Promise.all([db.a.jobs.move(running.id, 'node-lost', 'node-a', 7), db.b.jobs.move(running.id, 'node-lost', 'node-b', 7)]);
        assert.equal([x, y].filter(Boolean).length, 1);
        const moved = (await db.a.jobs.get(running.id))!;
        assert.deepEqual([moved.state, moved.node, moved.attempts], ['pending', x ? 'node-a' : 'node-b', 1]);
        assert.equal(await db.a.jobs.abandon(running.id, 'node-lost', 'lost', 8), false, 'no longer the lost node’s');
        const [p, q] = await Promise.all([
          db.a.jobs.abandon(pending.id, 'node-lost', 'node lost', 8),
          db.b.jobs.abandon(pending.id, 'node-lost', 'node lost', 8),
        ]);
        assert.equal([p, q].filter(Boolean).length, 1);
        assert.deepEqual([(await db.a.jobs.get(pending.id))!.state, (await db.a.jobs.get(pending.id))!.lastError], ['failed', 'node lost']);
        assert.equal(await db.a.jobs.move(pending.id, 'node-lost', 'node-a', 9), false, 'a failed job stays failed');
      }
    });
  });
}
