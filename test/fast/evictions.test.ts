import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { ADMIN_KEY } from '../helpers/server.js';

/** GET /v1/devboxes/evictions/watch: streams only for text/event-stream (like the API); with nothing pending it sends no event. */
let f: FastApp;

before(async () => {
  f = await buildFastApp();
});
after(() => f?.close());

test('any Accept but text/event-stream gets an empty text/plain answer at once', async () => {
  const res = await f.call({ method: 'GET', url: '/v1/devboxes/evictions/watch', headers: { accept: 'application/json' } });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain/);
  assert.equal(res.body, '');
});

test('text/event-stream opens a stream that stays open and, with no eviction pending, carries no event', async () => {
  await f.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = f.app.server.address() as { port: number };
  const got = await new Promise<{ status: number; type: string; text: string }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/v1/devboxes/evictions/watch', headers: { accept: 'text/event-stream', authorization: `Bearer ${ADMIN_KEY}` } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      setTimeout(() => {
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text });
        req.destroy();
      }, 300);
    });
    req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
  });
  assert.equal(got.status, 200);
  assert.equal(got.type, 'text/event-stream');
  assert.doesNotMatch(got.text, /^data:/m);
  assert.match(got.text, /^: stream/);
});

test("the SDK's watchEvictions opens the stream (no 404 for onEvict's reconnect loop)", async () => {
  const { default: Runloop } = await import('@runloop/api-client');
  const { port } = f.app.server.address() as { port: number };
  const client = new Runloop({ baseURL: `http://127.0.0.1:${port}`, bearerToken: ADMIN_KEY, maxRetries: 0 });
  const stream = await client.devboxes.watchEvictions({ headers: { Accept: 'text/event-stream' } });
  const first = await Promise.race([stream[Symbol.asyncIterator]().next(), new Promise((r) => setTimeout(() => r('open'), 300))]);
  assert.equal(first, 'open', 'no event arrives');
  stream.controller.abort();
});
