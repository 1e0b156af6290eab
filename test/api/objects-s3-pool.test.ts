import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { startTestS3 } from '../helpers/s3.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The S3 backend's socket pool (64 sockets) is not the downloads' to take: downloads whose clients never read
 * fill a pool of their own and leave uploads and `complete` (S3 PUT and HEAD) answering at once.
 */
let s3: Awaited<ReturnType<typeof startTestS3>>;
let server: TestServer;
let api: Runloop;
const stalled: http.ClientRequest[] = [];
before(async () => {
  s3 = await startTestS3();
  server = await startTestServer(s3.env());
  api = server.client({ http2: false });
});
after(async () => {
  for (const r of stalled) r.destroy();
  await server?.stop();
  await s3?.stop();
});

test('64 downloads (the whole pool) whose clients stopped reading do not stop another PUT and complete', async () => {
  const o = await api.objects.create({ name: 'big', content_type: 'binary' });
  assert.equal((await fetch(o.upload_url!, { method: 'PUT', body: Buffer.alloc(16 * 1024 * 1024, 2) })).status, 200);
  await api.objects.complete(o.id);
  const { download_url } = await api.objects.download(o.id, {});
  for (let i = 0; i < 64; i++) {
    await new Promise<void>((resolve, reject) => {
      const r = http.get(download_url, (m) => {
        assert.equal(m.statusCode, 200);
        m.pause();
        resolve();
      });
      r.on('error', reject);
      stalled.push(r);
    });
  }
  await new Promise((r) => setTimeout(r, 1000));
  const started = Date.now();
  const other = await api.objects.create({ name: 'small', content_type: 'text' });
  const put = await fetch(other.upload_url!, { method: 'PUT', body: 'hello', signal: AbortSignal.timeout(10_000) });
  assert.equal(put.status, 200);
  const done = await api.objects.complete(other.id, {}, { timeout: 10_000, maxRetries: 0 });
  assert.equal(done.size_bytes, 5);
  assert.ok(Date.now() - started < 5_000, `PUT + complete took ${Date.now() - started} ms`);
});
