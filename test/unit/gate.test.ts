import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Gate } from '../../src/lib/gate.js';

test('one key holds at most its share; a freed slot goes to another key waiting behind it', async () => {
  const gate = new Gate(2, 10, 1, 2);
  const a1 = await gate.enter(undefined, 'a');
  assert.ok(a1);
  const a2 = gate.enter(undefined, 'a'); // over a's share: waits although a slot is free
  const b1 = await gate.enter(undefined, 'b'); // b takes the free slot at once
  assert.ok(b1);
  assert.equal(gate.holders, 2);
  let a2Got = false;
  void a2.then(() => (a2Got = true));
  b1!(); // b's slot frees: a is still at its share, so the slot stays free for others
  await new Promise((r) => setImmediate(r));
  assert.equal(a2Got, false);
  a1!(); // a's own slot frees: its waiting request gets a turn
  const second = await a2;
  assert.ok(second);
  second!();
  assert.equal(gate.holders, 0);
});

test('per-key queue share and the global queue bound waiting; abort gives the place up', async () => {
  const gate = new Gate(1, 3, 1, 1);
  const hold = await gate.enter(undefined, 'a');
  assert.ok(hold);
  const ctl = new AbortController();
  const waitA = gate.enter(ctl.signal, 'a');
  assert.equal(await gate.enter(undefined, 'a'), null, 'a may queue one request only');
  const waitB = gate.enter(undefined, 'b');
  assert.equal(gate.waiters, 2);
  ctl.abort();
  assert.equal(await waitA, null);
  assert.equal(gate.waiters, 1);
  hold!();
  const b = await waitB;
  assert.ok(b, 'b gets the slot a gave back');
  b!();
  assert.equal(gate.holders, 0);
});
