import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { newId } from '../../src/lib/ids.js';
import { account, devbox, execution, key, openPostgres, openSqlite, rejectsWith, snapshot, holdPostgres, type Backend } from './fixtures.js';

// The same cases against SQLite (a temp file) and PostgreSQL (a throwaway cluster): one contract, two stores.
// Devboxes, snapshots, executions, logs and transactions here; accounts and x-request-id claims in
// contract-accounts.test.ts.
after(holdPostgres());

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('devboxes: insert, get scoped to the account, list pages by id with a total and a status filter', async () => {
      await ready;
      const acc = await account(db.a);
      const boxes = [];
      for (let i = 0; i < 5; i++) boxes.push(devbox(acc.id, { status: i % 2 ? 'running' : 'shutdown', metadata: { i: String(i) } }));
      for (const d of boxes) await db.a.devboxes.insert(d);
      boxes.sort((x, y) => (x.id < y.id ? -1 : 1)); // ids made in one millisecond order by their random part
      assert.deepEqual(await db.b.devboxes.get(acc.id, boxes[0]!.id), boxes[0]);
      assert.equal(await db.b.devboxes.get('acc_other', boxes[0]!.id), undefined);
      const p1 = await db.b.devboxes.list(acc.id, { limit: 2, includeTotalCount: true });
      assert.deepEqual(
        p1.items.map((d) => d.id),
        boxes.slice(0, 2).map((d) => d.id),
      );
      assert.equal(p1.hasMore, true);
      assert.equal(p1.totalCount, 5);
      const p2 = await db.b.devboxes.list(acc.id, { limit: 10, startingAfter: p1.items[1]!.id, includeTotalCount: false });
      assert.deepEqual(
        p2.items.map((d) => d.id),
        boxes.slice(2).map((d) => d.id),
      );
      assert.equal(p2.hasMore, false);
      const running = await db.b.devboxes.list(acc.id, { limit: 10, includeTotalCount: true }, { status: 'running' });
      assert.deepEqual(
        running.items.map((d) => d.id),
        boxes.filter((d) => d.status === 'running').map((d) => d.id),
      );
      assert.equal(running.totalCount, 2);
    });

    test('devboxes: search finds an exact id or a part of the name in any case, wildcards literal, paged exactly', async () => {
      await ready;
      const acc = await account(db.a);
      const names = ['Web-Alpha', 'web_beta', 'api', 'WEB 100%', null, 'webxbeta'];
      const boxes = names.map((name, i) => devbox(acc.id, { name, status: i % 2 ? 'running' : 'shutdown' }));
      for (const d of boxes) await db.a.devboxes.insert(d);
      await db.a.devboxes.insert(devbox((await account(db.a)).id, { name: 'web elsewhere' }));
      boxes.sort((x, y) => (x.id < y.id ? -1 : 1));
      const find = async (search: string, status?: 'running') =>
        (await db.b.devboxes.list(acc.id, { limit: 100, includeTotalCount: true }, { search, status })).items.map((d) => d.name).sort();
      assert.deepEqual(await find('web'), ['WEB 100%', 'Web-Alpha', 'web_beta', 'webxbeta'], 'contained, any case, this account only');
      assert.deepEqual(await find('b_b'), ['web_beta'], '_ matches itself');
      assert.deepEqual(await find('0%'), ['WEB 100%'], '% matches itself');
      assert.deepEqual(await find('%'), ['WEB 100%']);
      const unnamed = boxes.find((d) => d.name === null)!;
      assert.deepEqual(
        (await db.b.devboxes.list(acc.id, { limit: 10, includeTotalCount: true }, { search: unnamed.id })).items.map((d) => d.id),
        [unnamed.id],
        'the exact id, named or not',
      );
      assert.deepEqual(await find(unnamed.id.slice(0, -1)), [], 'a part of an id is no match');
      assert.deepEqual(await find('WEB', 'running'), ['WEB 100%', 'web_beta', 'webxbeta'], 'with a status (odd positions run)');
      const webs = boxes.filter((d) => d.name?.toLowerCase().includes('web')).map((d) => d.id);
      const p1 = await db.b.devboxes.list(acc.id, { limit: 3, includeTotalCount: true }, { search: 'web' });
      assert.deepEqual(
        p1.items.map((d) => d.id),
        webs.slice(0, 3),
      );
      assert.equal(p1.hasMore, true);
      assert.equal(p1.totalCount, 4);
      const p2 = await db.b.devboxes.list(acc.id, { limit: 3, startingAfter: p1.items[2]!.id, includeTotalCount: true }, { search: 'web' });
      assert.deepEqual(
        p2.items.map((d) => d.id),
        webs.slice(3),
      );
      assert.equal(p2.hasMore, false);
      assert.equal(p2.totalCount, 4, 'the total counts every match, not what is left');
    });

    test('two racing transitions from running: exactly one applies, and its transition alone is recorded', async () => {
      await ready;
      const acc = await account(db.a);
      for (let round = 0; round < 10; round++) {
        const d = devbox(acc.id);
        await db.a.devboxes.insert(d);
        const [x, y] = await Promise.all([
          db.a.devboxes.transition(d.id, { from: ['running'], to: 'suspending', transitions: [{ status: 'suspending', transitionTimeMs: 1 }] }),
          db.b.devboxes.transition(d.id, {
            from: ['running'],
            to: 'shutdown',
            transitions: [{ status: 'shutdown', transitionTimeMs: 2 }],
            endTimeMs: 2,
            shutdownReason: 'api_shutdown',
          }),
        ]);
        assert.equal([x, y].filter(Boolean).length, 1, 'exactly one transition applies');
        const now = (await db.a.devboxes.getById(d.id))!;
        assert.equal(now.status, (x ?? y)!.status);
        assert.deepEqual(
          now.stateTransitions.map((t) => t.status),
          ['provisioning', now.status],
        );
      }
    });

    test('a transition appends several steps in order and sets only what it names; a rename leaves the status', async () => {
      await ready;
      const acc = await account(db.a);
      const d = devbox(acc.id, { status: 'provisioning', name: 'before', metadata: { k: 'v' } });
      await db.a.devboxes.insert(d);
      const running = await db.a.devboxes.transition(d.id, {
        from: ['provisioning', 'initializing'],
        to: 'running',
        transitions: [
          { status: 'initializing', transitionTimeMs: 10 },
          { status: 'running', transitionTimeMs: 11, failureReason: 'why' },
        ],
        layers: ['l2', 'l1'],
      });
      assert.deepEqual(running!.stateTransitions.slice(1), [
        { status: 'initializing', transitionTimeMs: 10 },
        { status: 'running', transitionTimeMs: 11, failureReason: 'why' },
      ]);
      assert.deepEqual(running!.layers, ['l2', 'l1']);
      assert.equal(running!.endTimeMs, null);
      // A rename made from a stale copy cannot revert the status: it writes only its column.
      const renamed = await db.b.devboxes.patch(acc.id, d.id, { name: 'after' });
      assert.equal(renamed!.status, 'running');
      assert.equal(renamed!.name, 'after');
      assert.deepEqual(renamed!.metadata, { k: 'v' });
      assert.equal(await db.b.devboxes.patch('acc_other', d.id, { name: 'x' }), undefined);
      assert.equal(await db.a.devboxes.keepAlive(acc.id, d.id, 12345), true);
      assert.equal((await db.a.devboxes.getById(d.id))!.keepAliveAtMs, 12345);
      await db.a.devboxes.transition(d.id, { from: ['running'], to: 'failure', transitions: [], endTimeMs: 99, failureReason: 'out_of_memory' });
      assert.equal(await db.a.devboxes.keepAlive(acc.id, d.id, 5), false, 'an ended box keeps its mark');
      const ended = (await db.a.devboxes.getById(d.id))!;
      assert.equal(ended.failureReason, 'out_of_memory');
      assert.equal(ended.endTimeMs, 99);
    });

    test('view parts: recorded at insert, added once by markView (also in a transaction), NULL rows stay NULL', async () => {
      await ready;
      const acc = await account(db.a);
      const d = devbox(acc.id, { viewParts: ['mcp'] });
      const old = devbox(acc.id, { viewParts: null });
      await db.a.devboxes.insert(d);
      await db.a.devboxes.insert(old);
      assert.deepEqual((await db.a.devboxes.getById(d.id))!.viewParts, ['mcp']);
      await db.a.transaction(async (tx) => {
        await tx.devboxes.markView(d.id, 'tunnel');
        await tx.devboxes.markView(d.id, 'tunnel');
      });
      await db.a.devboxes.markView(d.id, 'mcp');
      assert.deepEqual((await db.a.devboxes.getById(d.id))!.viewParts, ['mcp', 'tunnel']);
      await db.a.devboxes.markView(old.id, 'tunnel');
      assert.equal((await db.a.devboxes.getById(old.id))!.viewParts, null, 'a row from before the record reads every part anyway');
      // A transaction that fails leaves the part unrecorded.
      await assert.rejects(
        db.a.transaction(async (tx) => {
          await tx.devboxes.markView(d.id, 'gateway');
          throw new Error('rolled back');
        }),
      );
      assert.deepEqual((await db.a.devboxes.getById(d.id))!.viewParts, ['mcp', 'tunnel']);
    });

    test('countByStatus counts every account by status and leaves out pooled boxes', async () => {
      await ready;
      const before = await db.a.devboxes.countByStatus();
      const [x, y] = [await account(db.a), await account(db.a)];
      for (const d of [
        devbox(x.id, { status: 'running' }),
        devbox(y.id, { status: 'running' }),
        devbox(y.id, { status: 'suspended' }),
        devbox('', { status: 'running' }),
      ])
        await db.a.devboxes.insert(d);
      const after = await db.a.devboxes.countByStatus();
      assert.equal((after.running ?? 0) - (before.running ?? 0), 2);
      assert.equal((after.suspended ?? 0) - (before.suspended ?? 0), 1);
      assert.ok(Object.values(after).every((n) => typeof n === 'number'));
    });

    test('listByStatus can scope to a node', async () => {
      await ready;
      const acc = await account(db.a);
      const mine = devbox(acc.id, { status: 'resuming', node: 'n1' });
      const theirs = devbox(acc.id, { status: 'resuming', node: 'n2' });
      await db.a.devboxes.insert(mine);
      await db.a.devboxes.insert(theirs);
      const ids = (await db.a.devboxes.listByStatus(['resuming'], 'n1')).map((d) => d.id);
      assert.ok(ids.includes(mine.id) && !ids.includes(theirs.id));
      const all = (await db.a.devboxes.listByStatus(['resuming'])).map((d) => d.id);
      assert.ok(all.includes(mine.id) && all.includes(theirs.id));
    });

    test('a transaction commits as a whole or not at all', async () => {
      await ready;
      const kept = { id: newId('acc'), name: 'kept', createTimeMs: 1 };
      await db.a.transaction(async (tx) => {
        await tx.accounts.createAccount(kept);
        await tx.accounts.insertKey(key(kept.id));
      });
      assert.ok(await db.b.accounts.getAccount(kept.id));
      const lost = { id: newId('acc'), name: 'lost', createTimeMs: 1 };
      await assert.rejects(
        db.a.transaction(async (tx) => {
          await tx.accounts.createAccount(lost);
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await db.a.accounts.getAccount(lost.id), undefined);
      assert.equal(await db.b.accounts.getAccount(lost.id), undefined);
    });

    test('a statement from outside an open transaction neither joins it nor sees its writes', async () => {
      await ready;
      const inside = { id: newId('acc'), name: 'inside', createTimeMs: 1 };
      const outside = { id: newId('acc'), name: 'outside', createTimeMs: 1 };
      let wrote!: () => void;
      const written = new Promise<void>((r) => (wrote = r));
      let proceed!: () => void;
      const proceeding = new Promise<void>((r) => (proceed = r));
      const tx = db.a.transaction(async (t) => {
        await t.accounts.createAccount(inside);
        wrote();
        await proceeding; // other requests run meanwhile (a timer, an HTTP round trip...)
        throw new Error('rolled back');
      });
      await written;
      // The same store object, as an unrelated request would use it.
      const unrelated = db.a.accounts.createAccount(outside);
      const seen = db.a.accounts.getAccount(inside.id);
      await new Promise((r) => setTimeout(r, 50));
      proceed();
      await assert.rejects(tx, /rolled back/);
      await unrelated;
      assert.equal(await seen, undefined, 'an uncommitted write is invisible outside');
      assert.ok(await db.a.accounts.getAccount(outside.id), 'the unrelated write survives the rollback');
      assert.equal(await db.a.accounts.getAccount(inside.id), undefined);
    });

    test('constraints become domain errors: duplicates, unknown references, a second snapshot in progress', async () => {
      await ready;
      const acc = await account(db.a);
      await rejectsWith(db.b.accounts.createAccount(acc), 'conflict');
      await rejectsWith(db.a.devboxes.insert(devbox('acc_missing')), 'invalid_request');
      const d = devbox(acc.id);
      await db.a.devboxes.insert(d);
      await db.a.snapshots.insert(snapshot(d));
      await rejectsWith(db.b.snapshots.insert(snapshot(d)), 'conflict', /snapshot in progress/);
      const k = key(acc.id);
      await db.a.accounts.insertKey(k);
      await rejectsWith(db.b.accounts.insertKey({ ...k, id: newId('key') }), 'conflict');
      assert.equal(await db.b.accounts.insertKeyIfAbsent({ ...k, id: newId('key') }), false);
    });

    test('snapshots: conditional status changes, column patches, metadata filters', async () => {
      await ready;
      const acc = await account(db.a);
      const d = devbox(acc.id);
      await db.a.devboxes.insert(d);
      const s = snapshot(d, { metadata: { team: 'a b', 'odd.key': 'x' } });
      await db.a.snapshots.insert(s);
      assert.equal((await db.a.snapshots.inProgressFor(d.id))!.id, s.id);
      const [won, lost] = await Promise.all([
        db.a.snapshots.setStatus(s.id, ['in_progress'], 'complete', { sizeBytes: 42 }),
        db.b.snapshots.setStatus(s.id, ['in_progress'], 'error', { errorMessage: 'late' }),
      ]).then((r) => (r[0] ? r : [r[1], r[0]]));
      assert.ok(won && !lost);
      assert.equal(await db.a.snapshots.inProgressFor(d.id), undefined);
      await db.a.snapshots.insert(snapshot(d, { status: 'complete', metadata: { team: 'b' } }));
      const patched = await db.b.snapshots.patch(acc.id, s.id, { name: 'n', commitMessage: 'm' });
      assert.equal(patched!.status, won!.status, 'a patch leaves the status');
      assert.equal(patched!.name, 'n');
      const q = { limit: 10, includeTotalCount: true };
      const eq = await db.a.snapshots.list(acc.id, q, { metadataEquals: { 'odd.key': 'x' } });
      assert.deepEqual(
        eq.items.map((x) => x.id),
        [s.id],
      );
      const any = await db.a.snapshots.list(acc.id, q, { metadataIn: { team: ['a b', 'b'] } });
      assert.equal(any.totalCount, 2);
      const none = await db.a.snapshots.list(acc.id, q, { metadataIn: { team: [] } });
      assert.equal(none.items.length, 0);
      await db.a.snapshots.setStatus(s.id, ['complete', 'error'], 'deleted');
      assert.equal((await db.a.snapshots.list(acc.id, q, { devboxId: d.id })).totalCount, 1, 'deleted snapshots are not listed');
      assert.equal((await db.a.snapshots.get(acc.id, s.id))!.status, 'deleted');
    });

    test('executions and the devbox log: a completed record stays completed; log sequence numbers increase', async () => {
      await ready;
      const acc = await account(db.a);
      const d = devbox(acc.id, { node: 'exec-node' });
      await db.a.devboxes.insert(d);
      const e = execution(d, { commandId: 'cmd-1' });
      await db.a.executions.insert(e);
      await db.a.executions.update({ ...e, status: 'completed', exitStatus: 0, endTimeMs: 5, stdoutBytes: 3 });
      await db.a.executions.update({ ...e, status: 'running' });
      const stored = await db.b.executions.findByCommandId(d.id, 'cmd-1');
      assert.equal(stored!.status, 'completed');
      assert.equal(stored!.stdoutBytes, 3);
      await rejectsWith(db.a.executions.insert(execution(d, { commandId: 'cmd-1' })), 'conflict');
      const open = execution(d);
      await db.a.executions.insert(open);
      assert.deepEqual(
        (await db.a.executions.listUnfinished('exec-node')).map((x) => x.id),
        [open.id],
      );
      assert.equal(
        (await db.a.executions.listUnfinished('elsewhere')).some((x) => x.id === open.id),
        false,
      );
      const base = { devboxId: d.id, timestampMs: 1, level: 'info' as const, source: 'exec' as const };
      const first = await db.a.logs.append([
        { ...base, message: 'one', cmdId: e.id },
        { ...base, message: 'two' },
      ]);
      const second = await db.b.logs.append([{ ...base, message: 'three', cmdId: e.id }]);
      assert.ok(first[0]!.seq < first[1]!.seq && first[1]!.seq < second[0]!.seq);
      assert.deepEqual(
        (await db.a.logs.list(d.id, { executionId: e.id })).map((x) => x.message),
        ['one', 'three'],
      );
      assert.deepEqual(
        (await db.a.logs.list(d.id, { afterSeq: first[0]!.seq, limit: 1 })).map((x) => x.message),
        ['two'],
      );
    });

    test('a pooled box is claimed once: its record written over by one create, while it is pooled and running', async () => {
      await ready;
      const acc = await account(db.a);
      const pooled = { ...devbox('', { node: 'pool-node' }), status: 'running' as const };
      await db.a.devboxes.insert(pooled);
      const taken = { ...pooled, accountId: acc.id, name: 'mine', status: 'provisioning' as const, metadata: { k: 'v' } };
      assert.equal(await db.a.devboxes.claimPooled(taken), true);
      assert.equal(await db.b.devboxes.claimPooled({ ...taken, name: 'second' }), false, 'a second create finds it taken');
      const stored = await db.b.devboxes.get(acc.id, pooled.id);
      assert.deepEqual([stored?.name, stored?.status, stored?.metadata], ['mine', 'provisioning', { k: 'v' }]);
      assert.equal(await db.a.devboxes.get('', pooled.id), undefined, 'no longer the pools account');
      const tenants = devbox(acc.id);
      await db.a.devboxes.insert({ ...tenants, status: 'running' });
      assert.equal(await db.a.devboxes.claimPooled({ ...tenants, name: 'stolen' }), false, "a tenant's box is never claimed");
    });

    test("an execution's record and its log entries are saved together: both land, or neither", async () => {
      await ready;
      const acc = await account(db.a);
      const d = devbox(acc.id);
      await db.a.devboxes.insert(d);
      const e = execution(d, { commandId: 'cmd-save' });
      const entry = (message: string) => ({ devboxId: d.id, timestampMs: 1, level: 'info' as const, source: 'exec' as const, cmdId: e.id, message });
      await db.a.executions.save(e, true, [entry('started')]);
      await db.a.executions.save({ ...e, status: 'completed', exitStatus: 0, endTimeMs: 5 }, false, [entry('exited')]);
      assert.equal((await db.b.executions.get(d.id, e.id))!.exitStatus, 0);
      // A record that cannot be written (its command id is taken) takes the entries of its batch with it,
      // and an entry that cannot be written (no devbox) takes its record.
      await rejectsWith(db.a.executions.save(execution(d, { commandId: 'cmd-save' }), true, [entry('lost')]), 'conflict');
      const other = execution(d);
      await assert.rejects(db.a.executions.save(other, true, [entry('fine'), { ...entry('bad'), devboxId: null as unknown as string }]));
      assert.equal(await db.b.executions.get(d.id, other.id), undefined);
      assert.deepEqual(
        (await db.b.logs.list(d.id, {})).map((x) => x.message),
        ['started', 'exited'],
      );
    });
  });
}
