import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { startTestS3 } from '../helpers/s3.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The S3 backend's socket pool is not the downloads' to take: downloads whose clients never read fill a pool
 * of their own (DEVBOXD_S3_READS, 4 here) and leave uploads and `complete` (S3 PUT and HEAD) answering at
 * once; further downloads wait in a bounded queue (DEVBOXD_S3_READ_QUEUE) for a place, past it a 429.
 */
let s3: Awaited<ReturnType<typeof startTestS3>>;
let server: TestServer;
let api: Runloop;
const stalled: http.ClientRequest[] = [];
before(async () => {
  s3 = await startTestS3();
  server = await startTestServer({ ...s3.env(), DEVBOXD_S3_READS: '4', DEVBOXD_S3_READ_QUEUE: '2' });
  api = server.client({ http2: false });
});
after(async () => {
  for (const r of stalled) r.destroy();
  await server?.stop();
  await s3?.stop();
});

/** Starts a download and resolves with its answer once the headers come (the body left unread). */
const download = (url: string) =>
  new Promise<http.IncomingMessage>((resolve, reject) => {
    const r = http.get(url, (m) => {
      m.pause();
      resolve(m);
    });
    r.on('error', reject);
    stalled.push(r);
  });
let downloadUrl: string;

test('downloads (the whole read pool) whose clients stopped reading do not stop another PUT and complete', async () => {
  const o = await api.objects.create({ name: 'big', content_type: 'binary' });
  assert.equal((await fetch(o.upload_url!, { method: 'PUT', body: Buffer.alloc(16 * 1024 * 1024, 2) })).status, 200);
  await api.objects.complete(o.id);
  const { download_url } = await api.objects.download(o.id, {});
  downloadUrl = download_url;
  for (let i = 0; i < 4; i++) assert.equal((await download(download_url)).statusCode, 200);
  await new Promise((r) => setTimeout(r, 1000));
  const started = Date.now();
  const other = await api.objects.create({ name: 'small', content_type: 'text' });
  const put = await fetch(other.upload_url!, { method: 'PUT', body: 'hello', signal: AbortSignal.timeout(10_000) });
  assert.equal(put.status, 200);
  const done = await api.objects.complete(other.id, {}, { timeout: 10_000, maxRetries: 0 });
  assert.equal(done.size_bytes, 5);
  assert.ok(Date.now() - started < 5_000, `PUT + complete took ${Date.now() - started} ms`);
});

test('past the pool, downloads wait in the queue for a place; past the queue, 429 with Retry-After', async () => {
  const waiting = [download(downloadUrl), download(downloadUrl)];
  let answered = 0;
  for (const w of waiting) void w.then(() => answered++);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(answered, 0, 'the queued downloads wait');
  const refused = await download(downloadUrl);
  assert.equal(refused.statusCode, 429);
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  refused.resume();
  // A stalled client goes: its place passes to the oldest waiter, whose bytes then flow.
  stalled[0]!.destroy();
  const first = await waiting[0]!;
  assert.equal(first.statusCode, 200);
  let bytes = 0;
  for await (const chunk of first) bytes += (chunk as Buffer).length;
  assert.equal(bytes, 16 * 1024 * 1024);
  // The place the finished download freed goes to the next waiter.
  assert.equal((await waiting[1]!).statusCode, 200);
});
