import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Containment of execution output (issue 11, item 2) and of read_file_contents memory (item 6), through the
 * SDK: a flood keeps at most the cap on the host with exact offsets, a box's output has a budget and goes
 * with the box, the server stays responsive, and concurrent large reads keep the server's RSS bounded.
 */
const STREAM_MAX = 1024 * 1024;
const SEGMENT = STREAM_MAX / 8;
const BOX_MAX = 3 * 1024 * 1024;
const CONTENTS_CONCURRENCY = 2;
const CONTENTS_QUEUE = 16;
/** What one account may hold and queue (deps.ts: half of each). */
const PER_ACCOUNT = Math.max(1, CONTENTS_CONCURRENCY / 2) + CONTENTS_QUEUE / 2;
/**
 * RSS growth allowed for the concurrent read_file_contents below: a fraction of what holding each 16 MiB read
 * whole would take (README: file requests add at most about 300 MiB, measured with 60 MiB files).
 */
const RSS_CEILING = 192 * 1024 * 1024;

let server: TestServer;
let api: Runloop;
before(async () => {
  server = await startTestServer({
    DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES: String(STREAM_MAX),
    DEVBOXD_EXECUTION_OUTPUT_BOX_MAX_BYTES: String(BOX_MAX),
    DEVBOXD_FILE_CONTENTS_CONCURRENCY: String(CONTENTS_CONCURRENCY),
    DEVBOXD_FILE_CONTENTS_QUEUE: String(CONTENTS_QUEUE),
  });
  api = server.client({ maxRetries: 10 });
});
after(async () => server?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// The API server's and the node agent's: the bytes pass through both.
const rss = () => server.rssBytes();

async function collect(stream: AsyncIterable<{ output: string; offset?: number }>) {
  const chunks: { output: string; offset: number }[] = [];
  for await (const c of stream) chunks.push({ output: c.output, offset: c.offset! });
  return chunks;
}

/** Bytes on the host of one execution's output files (or of all of a box's when `id` is omitted). */
function hostBytes(boxId: string, id = ''): number {
  const dir = path.join(server.apiDir, 'executions', boxId);
  if (!fs.existsSync(dir)) return 0;
  let sum = 0;
  for (const n of fs.readdirSync(dir).filter((name) => name.startsWith(id))) {
    try {
      sum += fs.statSync(path.join(dir, n)).size;
    } catch {
      /* a segment dropped between the listing and the stat */
    }
  }
  return sum;
}

const isMarker = (s: string) => s.startsWith('[devboxd: ');
// The flood's line: 64 bytes, so segment boundaries fall between lines. The stream sends an event per line
// (what the SDK's exec callbacks expect); 2-byte lines made the test's own SSE parsing its slowest part.
const WORD = 'y'.repeat(63);
const LINE = `${WORD}\n`;

describe('execution output containment', () => {
  let box: Devbox;
  let floodId = '';
  before(async () => {
    box = await server.sdk().devbox.create({ name: 'output-box' });
  });
  after(async () => box?.shutdown().catch(() => undefined));

  test('a yes flood keeps at most the cap on the host, offsets stay exact, /healthz stays fast', async () => {
    const e = await api.devboxes.executeAsync(box.id, { command: `timeout 3 yes ${WORD}; echo done` });
    floodId = e.execution_id;
    const latencies: number[] = [];
    const until = Date.now() + 2500;
    while (Date.now() < until) {
      const t = performance.now();
      const res = await fetch(`${server.url}/healthz`);
      await res.arrayBuffer();
      latencies.push(performance.now() - t);
      assert.ok(hostBytes(box.id, floodId) <= STREAM_MAX, 'output on the host stays under the cap while it runs');
      await sleep(50);
    }
    const done = await api.devboxes.executions.awaitCompleted(box.id, floodId);
    assert.equal(done.exit_status, 0);
    assert.equal(done.stdout_truncated, true);
    assert.ok(done.stdout!.endsWith(`${LINE}${LINE}done\n`));
    assert.ok(hostBytes(box.id, floodId) <= STREAM_MAX, `${hostBytes(box.id, floodId)} bytes on the host`);
    latencies.sort((a, b) => a - b);
    const p50 = latencies[Math.floor(latencies.length / 2)]!;
    assert.ok(p50 < 500, `/healthz p50 during the flood: ${p50} ms`);

    // From 0: the head, one marker whose offset is where kept bytes resume, then the tail to the end.
    const chunks = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, floodId, { offset: '0' }));
    const m = chunks.findIndex((c) => isMarker(c.output));
    assert.ok(m > 0, 'a marker stands where bytes were dropped');
    assert.equal(chunks.filter((c) => isMarker(c.output)).length, 1);
    assert.equal(
      chunks
        .slice(0, m)
        .map((c) => c.output)
        .join(''),
      LINE.repeat(SEGMENT / LINE.length),
    );
    assert.equal(chunks[m - 1]!.offset, SEGMENT);
    const resume = chunks[m]!.offset;
    assert.equal(resume % SEGMENT, 0);
    assert.ok(resume > SEGMENT);
    const tail = chunks
      .slice(m + 1)
      .map((c) => c.output)
      .join('');
    const end = chunks.at(-1)!.offset;
    assert.equal(end - resume, Buffer.byteLength(tail), 'offsets count every byte after the marker');
    assert.ok(end - resume <= STREAM_MAX - SEGMENT);
    assert.ok(new RegExp(`^(${WORD}\n)+done\n$`).test(tail));

    // Resuming inside the dropped range: the marker says how much, then the kept bytes.
    const from = SEGMENT + 1001;
    const mid = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, floodId, { offset: String(from) }));
    assert.ok(isMarker(mid[0]!.output) && mid[0]!.output.includes(`${resume - from} bytes`), mid[0]!.output);
    assert.equal(mid[0]!.offset, resume);
    assert.equal(
      mid
        .slice(1)
        .map((c) => c.output)
        .join(''),
      tail,
    );
    // Resuming inside the kept tail: exactly the rest.
    const last = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, floodId, { offset: String(end - 7) }));
    assert.equal(last.map((c) => c.output).join(''), 'y\ndone\n');
    assert.equal(last.at(-1)!.offset, end);
  });

  test('a box keeps at most its output budget: the oldest finished output goes, and its view says so', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await api.devboxes.execute(box.id, { command: `head -c 2000000 /dev/zero | tr '\\0' ${'abcd'[i]}; echo end${i}` });
      const done = r.status === 'completed' ? r : await api.devboxes.executions.awaitCompleted(box.id, r.execution_id);
      assert.equal(done.exit_status, 0);
      assert.ok(done.stdout!.endsWith(`end${i}\n`));
      assert.ok(hostBytes(box.id) <= BOX_MAX, `${hostBytes(box.id)} bytes for the box`);
    }
    assert.equal(hostBytes(box.id, floodId), 0);
    const gone = await api.devboxes.executions.retrieve(box.id, floodId);
    assert.equal(gone.status, 'completed');
    assert.match(gone.stdout!, /output of this execution was removed/);
    const events = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, floodId, { offset: '0' }));
    assert.equal(events.length, 1);
    assert.match(events[0]!.output, /was removed/);
  });

  test('concurrent large read_file_contents keep server RSS under the ceiling; past the queue 429 + Retry-After', async () => {
    // 16 MiB: held whole (the bytes, the string, its JSON) by the 8 readers at once, that is twice the ceiling.
    const size = 16 * 1024 * 1024;
    await api.devboxes.execute(box.id, { command: `yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c ${size} > big.txt` });
    let peak = 0;
    const base = rss();
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
    try {
      const reads = await Promise.all(Array.from({ length: 8 }, () => api.devboxes.readFileContents(box.id, { file_path: 'big.txt' })));
      assert.ok(reads.every((t) => t.length === size && t.startsWith('abcdefghij')));
      const answers = await Promise.all(
        Array.from({ length: 32 }, async () => {
          const res = await fetch(`${server.url}/v1/devboxes/${box.id}/read_file_contents`, {
            method: 'POST',
            headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({ file_path: 'big.txt' }),
          });
          const body = await res.text();
          return { status: res.status, retryAfter: res.headers.get('retry-after'), length: body.length, body: res.status === 200 ? '' : body };
        }),
      );
      const ok = answers.filter((a) => a.status === 200);
      const busy = answers.filter((a) => a.status === 429);
      assert.equal(ok.length + busy.length, 32, JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 429)));
      assert.ok(ok.length >= PER_ACCOUNT && ok.every((a) => a.length === size), `${ok.length} answered`);
      assert.ok(busy.length > 0 && busy.every((a) => a.retryAfter === '1' && /file contents requests/.test(JSON.parse(a.body).message)));
    } finally {
      clearInterval(sampler);
    }
    console.log(`read_file_contents RSS: base ${(base / 2 ** 20).toFixed(0)} MiB, peak ${(peak / 2 ** 20).toFixed(0)} MiB`);
    assert.ok(peak - base < RSS_CEILING, `server RSS grew by ${peak - base} bytes`);

    // Not UTF-8: replacement characters, as before.
    await api.devboxes.execute(box.id, { command: `printf 'a\\377b\\303\\251' > bin.txt` });
    assert.equal(await api.devboxes.readFileContents(box.id, { file_path: 'bin.txt' }), 'a\uFFFDbé');
  });

  test('output cut off by a server restart keeps its exact size and offsets; the box budget is counted again', async () => {
    const size = 3_000_000;
    const e = await api.devboxes.executeAsync(box.id, { command: `head -c ${size} /dev/zero | tr '\\0' z; sleep 60` });
    // Wait until the last byte is on the host: the newest segment is complete.
    const last = Math.floor((size - 1) / SEGMENT);
    const lastPath = path.join(server.apiDir, 'executions', box.id, `${e.execution_id}.stdout.${last}`);
    for (let i = 0; i < 100 && !(fs.existsSync(lastPath) && fs.statSync(lastPath).size === size - last * SEGMENT); i++) await sleep(100);
    await server.restart();
    const done = await api.devboxes.executions.retrieve(box.id, e.execution_id);
    assert.equal(done.status, 'completed');
    assert.equal(done.exit_status, null);
    const chunks = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, e.execution_id, { offset: '0' }));
    assert.equal(chunks.at(-1)!.offset, size);
    const marker = chunks.find((c) => isMarker(c.output))!;
    assert.equal(
      size - marker.offset,
      Buffer.byteLength(
        chunks
          .slice(chunks.indexOf(marker) + 1)
          .map((c) => c.output)
          .join(''),
      ),
    );
    // After the restart the box's output still counts: more output keeps the box within its budget.
    const r = await api.devboxes.execute(box.id, { command: `head -c ${size} /dev/zero | tr '\\0' q` });
    if (r.status !== 'completed') await api.devboxes.executions.awaitCompleted(box.id, r.execution_id);
    assert.ok(hostBytes(box.id) <= BOX_MAX, `${hostBytes(box.id)} bytes for the box`);
  });

  test('a box that shuts down takes its output files with it; views say the output was removed', async () => {
    const r = await api.devboxes.execute(box.id, { command: 'echo last words' });
    const dir = path.join(server.apiDir, 'executions', box.id);
    assert.ok(fs.existsSync(dir));
    await box.shutdown();
    for (let i = 0; i < 50 && fs.existsSync(dir); i++) await sleep(100);
    assert.equal(fs.existsSync(dir), false, 'the output directory is gone');
    const view = await api.devboxes.executions.retrieve(box.id, r.execution_id);
    assert.match(view.stdout!, /output of this execution was removed/);
    assert.equal(view.stdout_truncated, true);
  });

  test('output of a box that ended while the server was down goes at the next start', async () => {
    const doomed = await server.sdk().devbox.create({ name: 'ends-while-down' });
    await api.devboxes.execute(doomed.id, { command: 'echo kept until the box ends' });
    const dir = path.join(server.apiDir, 'executions', doomed.id);
    assert.ok(fs.existsSync(dir));
    const state = JSON.parse(fs.readFileSync(path.join(server.dataDir, 'boxes', doomed.id, 'state.json'), 'utf8'));
    await server.restart({ whileDown: () => void process.kill(state.pid, 'SIGKILL') });
    for (let i = 0; i < 50 && fs.existsSync(dir); i++) await sleep(100);
    assert.equal((await api.devboxes.retrieve(doomed.id)).status, 'failure');
    assert.equal(fs.existsSync(dir), false, 'the output directory is gone');
  });
});
