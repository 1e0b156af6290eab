import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runLogsZip } from '../../src/resources/scenarios/run-logs.js';
import type { ScenarioRun } from '../../src/resources/scenarios/types.js';

test("a run's logs zip still ends when the devbox log cannot be read mid-stream", async () => {
  const run = { id: 'scr_x', accountId: 'acc', devboxId: 'dbx_gone', scoringResult: null } as unknown as ScenarioRun;
  const zip = runLogsZip(run, { id: 'scr_x' }, async () => {
    throw new Error('devbox dbx_gone not found');
  });
  const chunks: Buffer[] = [];
  for await (const c of zip) chunks.push(c as Buffer);
  const bytes = Buffer.concat(chunks);
  assert.equal(bytes.subarray(0, 2).toString(), 'PK');
  assert.ok(bytes.includes(Buffer.from('devbox.log')));
});
