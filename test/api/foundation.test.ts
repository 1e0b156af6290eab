import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Runloop from '@runloop/api-client';
import { ADMIN_KEY, startTestServer, type TestServer, DEVBOXD_BIN } from '../helpers/server.js';

let server: TestServer;
before(async () => {
  // A small body limit: an oversize body that fits the socket buffers gets its 413 rather than a reset.
  server = await startTestServer({ DEVBOXD_BODY_LIMIT: '65536' });
});
after(async () => server?.stop());

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    return (err as { status?: number }).status ?? -1;
  }
}

for (const http2 of [true, false]) {
  describe(`foundation over ${http2 ? 'h2c' : 'HTTP/1.1'}`, () => {
    test('accounts.me answers for the admin key', async () => {
      const me = await server.client({ http2 }).accounts.me();
      assert.equal(me.name, 'default');
      assert.match(me.id, /^acc_/);
    });

    test('a created API key works and carries ak_', async () => {
      const created = await server.client({ http2 }).apikeys.create({ name: 'ci' });
      assert.match(created.key_secret!, /^ak_/);
      const me = await server.client({ http2, apiKey: created.key_secret }).accounts.me();
      assert.equal(me.name, 'default');
    });

    test('unknown, missing and expired keys get 401', async () => {
      assert.equal(await status(server.client({ http2, apiKey: 'ak_nope' }).accounts.me()), 401);
      const res = await fetch(`${server.url}/v1/accounts/me`);
      assert.equal(res.status, 401);
      assert.match(((await res.json()) as { message: string }).message, /Authorization/);
      const soon = await server.client({ http2 }).apikeys.create({ expires_at_ms: Date.now() + 300 });
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(await status(server.client({ http2, apiKey: soon.key_secret }).accounts.me()), 401);
    });

    test('restricted keys are limited to their scopes', async () => {
      const rk = await server.client({ http2 }).restrictedKeys.create({
        name: 'reader',
        scopes: [{ resource_type: 'RESOURCE_TYPE_ACCOUNT', access_level: 'ACCESS_LEVEL_READ' }],
      });
      assert.match(rk.key_secret!, /^rk_/);
      const limited = server.client({ http2, apiKey: rk.key_secret, maxRetries: 0 });
      assert.equal((await limited.accounts.me()).name, 'default');
      assert.equal(await status(limited.apikeys.create({ name: 'escalate' })), 403);
      const writer = await server.client({ http2 }).restrictedKeys.create({
        scopes: [{ resource_type: 'RESOURCE_TYPE_ACCOUNT', access_level: 'ACCESS_LEVEL_WRITE' }],
      });
      // Account write mints keys, never one wider than itself: a restricted key, not a standard one.
      const asWriter = server.client({ http2, apiKey: writer.key_secret, maxRetries: 0 });
      assert.match((await asWriter.apikeys.create({ name: 'escalate' })).key_secret!, /^rk_/);
      const k = await asWriter.restrictedKeys.create({ scopes: [{ resource_type: 'RESOURCE_TYPE_ACCOUNT', access_level: 'ACCESS_LEVEL_READ' }] });
      assert.match(k.key_secret!, /^rk_/);
    });

    test('bad input gets a 400 naming the field; unknown paths 404 JSON', async () => {
      const err = (await server
        .client({ http2, maxRetries: 0 })
        .apikeys.create({ expires_at_ms: 'soon' as never })
        .catch((e) => e)) as { status: number; error: { message: string } };
      assert.equal(err.status, 400);
      assert.match(err.error.message, /expires_at_ms/);
      const res = await fetch(`${server.url}/v1/nothing-here`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      assert.equal(res.status, 404);
      assert.match(res.headers.get('content-type')!, /application\/json/);
    });
  });
}

test('empty JSON bodies read as {}; oversize bodies get 413', async () => {
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
  const ok = await fetch(`${server.url}/v1/apikeys`, { method: 'POST', headers });
  assert.equal(ok.status, 200);
  const big = await fetch(`${server.url}/v1/apikeys`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'x'.repeat(80 * 1024) }),
  });
  assert.equal(big.status, 413);
});

test('a key secret never rests in the database, not even in the x-request-id replay cache', async () => {
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json', 'x-request-id': 'retry-1' };
  const created = (await (await fetch(`${server.url}/v1/apikeys`, { method: 'POST', headers, body: '{}' })).json()) as { key_secret: string };
  assert.match(created.key_secret, /^ak_/);
  for (const file of ['devboxd.db', 'devboxd.db-wal']) {
    const p = path.join(server.apiDir, file);
    if (fs.existsSync(p)) assert.equal(fs.readFileSync(p).includes(created.key_secret), false, file);
  }
});

test('health and OpenAPI answer without a key; metrics need one', async () => {
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
  const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).text();
  assert.match(metrics, /devboxd_http_requests_total/);
  const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
  assert.ok(doc.paths['/v1/apikeys']);
});

test('operator CLI creates an account whose key sees only that account', async () => {
  const out = execFileSync(process.execPath, [DEVBOXD_BIN, 'accounts', 'create', 'team-b'], {
    env: { ...process.env, DEVBOXD_DATA_DIR: server.dataDir },
  }).toString();
  const key = out.trim().split('\n').at(-1)!;
  assert.match(key, /^ak_/);
  const me = await new Runloop({ baseURL: server.url, bearerToken: key }).accounts.me();
  assert.equal(me.name, 'team-b');
});
