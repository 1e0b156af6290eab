import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { filesUnder } from '../helpers/tree.js';

/**
 * Execution output's finished form is blobs (issue 10, item 6): once an execution ends its segments leave the
 * local spool for the blob store (`<data>/blobs/executions/<devbox>/<execution>/<stream>/<n>`, or the same
 * keys in an S3 bucket with DEVBOXD_TEST_BLOB_BACKEND=s3: output-blobs-s3.test.ts), views and streams read
 * them there (also after a kill -9 and restart), and retention deletes them with the box.
 */
const STREAM_MAX = 256 * 1024;
const RETENTION_S = 3;

let server: TestServer;
let api: Runloop;
before(async () => {
  server = await startTestServer({ DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES: String(STREAM_MAX), DEVBOXD_EXECUTION_OUTPUT_RETENTION: String(RETENTION_S) });
  api = server.client({ maxRetries: 10 });
});
after(async () => server?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const spoolOf = (box: string, id: string) => Object.keys(filesUnder(path.join(server.apiDir, 'executions', box))).filter((n) => n.startsWith(id));
/** The box's sealed blobs (below the execution `id`, if given), wherever the server keeps them (files or S3). */
const blobsOf = (box: string, id = '') => server.blobs(`executions/${box}/${id ? `${id}/` : ''}`);

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function collect(stream: AsyncIterable<{ output: string; offset?: number }>) {
  let text = '';
  let offset = 0;
  for await (const c of stream) {
    text += c.output;
    offset = c.offset!;
  }
  return { text, offset };
}

describe('execution output in the blob store', () => {
  test('a finished execution’s output is sealed into blobs and survives a kill -9 and restart, read from the blobs', async () => {
    const box = await api.devboxes.createAndAwaitRunning({ name: 'blob-output' });
    // ~189 KB of stdout: more than one segment (STREAM_MAX / 8), none dropped; and a line of stderr.
    const r = await api.devboxes.executeAndAwaitCompletion(box.id, { command: 'seq 1 30000; echo oops >&2' });
    assert.equal(r.exit_status, 0);
    const expected = Array.from({ length: 30000 }, (_, i) => `${i + 1}\n`).join('');
    await until(() => spoolOf(box.id, r.execution_id).length === 0, 'the spool to be sealed');
    const blobs = await blobsOf(box.id, r.execution_id);
    const stdoutSegments = Object.keys(blobs).filter((k) => k.startsWith('stdout/'));
    assert.ok(stdoutSegments.length > 1, `stdout is in several blobs: ${JSON.stringify(blobs)}`);
    assert.equal(
      Object.entries(blobs)
        .filter(([k]) => k.startsWith('stdout/'))
        .reduce((n, [, size]) => n + size, 0),
      Buffer.byteLength(expected),
    );
    assert.deepEqual(
      Object.entries(blobs).filter(([k]) => k.startsWith('stderr/')),
      [['stderr/0', 5]],
    );

    await server.restart();
    assert.deepEqual(spoolOf(box.id, r.execution_id), [], 'nothing of it is spooled: what follows is read from the blobs');
    const view = await api.devboxes.executions.retrieve(box.id, r.execution_id, { last_n: '2' } as never);
    assert.equal(view.stdout, '29999\n30000\n');
    assert.equal(view.stderr, 'oops\n');
    const full = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, r.execution_id, { offset: '0' }));
    assert.equal(full.text, expected);
    assert.equal(full.offset, Buffer.byteLength(expected));
    const from = Buffer.byteLength(expected) - 12;
    const rest = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, r.execution_id, { offset: String(from) }));
    assert.equal(rest.text, expected.slice(-12));
    await api.devboxes.shutdown(box.id);
  });

  test('output a kill -9 cut mid-execution is sealed into blobs at the next start and reads back whole', async () => {
    const box = await api.devboxes.createAndAwaitRunning({ name: 'blob-cut' });
    const e = await api.devboxes.executeAsync(box.id, { command: 'seq 1 20000; sleep 600' });
    const expected = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
    // Every byte is on the host once a view shows the last line (a view reads only what was written).
    for (let i = 0; i < 200; i++) {
      const v = await api.devboxes.executions.retrieve(box.id, e.execution_id, { last_n: '1' } as never);
      if (v.stdout === '20000\n') break;
      await sleep(50);
    }
    await server.restart();
    assert.deepEqual(spoolOf(box.id, e.execution_id), [], 'the spool was sealed at start');
    assert.ok(Object.keys(await blobsOf(box.id, e.execution_id)).length > 1);
    const done = await api.devboxes.executions.retrieve(box.id, e.execution_id);
    assert.equal(done.status, 'completed');
    const full = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, e.execution_id, { offset: '0' }));
    assert.equal(full.text, expected);
    await api.devboxes.shutdown(box.id);
  });

  test('retention: output stays readable after its box ends, then its blobs and spool are deleted', async () => {
    const box = await api.devboxes.createAndAwaitRunning({ name: 'blob-retention' });
    const r = await api.devboxes.executeAndAwaitCompletion(box.id, { command: 'echo kept for a while' });
    await until(async () => Object.keys(await blobsOf(box.id)).length > 0, 'the output to be sealed');
    await api.devboxes.shutdown(box.id);
    const soon = await api.devboxes.executions.retrieve(box.id, r.execution_id);
    assert.equal(soon.stdout, 'kept for a while\n', 'within the retention the output is still there');
    await until(async () => Object.keys(await blobsOf(box.id)).length === 0, 'retention to delete the blobs', (RETENTION_S + 10) * 1000);
    assert.deepEqual(spoolOf(box.id, ''), []);
    const gone = await api.devboxes.executions.retrieve(box.id, r.execution_id);
    assert.match(gone.stdout!, /output of this execution was removed/);
  });
});
