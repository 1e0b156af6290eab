import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import { CONSOLE_SECTIONS, registerConsole } from '../../src/platform/http/console.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';

/** How the API port serves the web console beside the API: what a browser and an API client each get. */
let f: FastApp;
before(async () => {
  f = await buildFastApp();
});
after(async () => f?.close());

test('/ and every console section answer the page, without a key, under a CSP that keeps scripts and calls on this origin', async () => {
  for (const url of ['/', '/devboxes', '/devboxes/dbx_123/terminal', '/api-keys', ...CONSOLE_SECTIONS.map((s) => `/${s}/x`)]) {
    const res = await f.call({ method: 'GET', url, key: null });
    assert.equal(res.statusCode, 200, url);
    assert.match(res.headers['content-type'] as string, /^text\/html/);
    assert.match(res.body, /<div id="app">/);
    assert.equal(res.headers['cache-control'], 'no-cache');
    const csp = res.headers['content-security-policy'] as string;
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
  }
});

test('the API keeps its paths: an unknown /v1 path is still a JSON 404, and API routes still ask for a key', async () => {
  const unknown = await f.call({ method: 'GET', url: '/v1/nope' });
  assert.equal(unknown.statusCode, 404);
  assert.equal(unknown.json().error, 'not_found');
  const noKey = await f.call({ method: 'GET', url: '/v1/devboxes', key: null });
  assert.equal(noKey.statusCode, 401);
  assert.equal((await f.call({ method: 'GET', url: '/not-a-section', key: null })).statusCode, 404);
});

test("the built assets are served with a year's immutable cache, and a missing one is a 404", async () => {
  const html = (await f.call({ method: 'GET', url: '/', key: null })).body;
  const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  assert.ok(asset, 'index.html names its script');
  const res = await f.call({ method: 'GET', url: asset, key: null });
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'] as string, /javascript/);
  assert.match(res.headers['cache-control'] as string, /max-age=31536000.*immutable|immutable.*max-age=31536000/);
  assert.equal((await f.call({ method: 'GET', url: '/assets/nope-123.js', key: null })).statusCode, 404);
  assert.equal((await f.call({ method: 'GET', url: '/assets/../../package.json', key: null })).statusCode, 404);
});

test('a server whose console is not built says how to build it, and serves it once built without a restart', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-'));
  const app = Fastify();
  await registerConsole(app, { dir, connect: ['https://api.example.com'] });
  try {
    const missing = await app.inject({ method: 'GET', url: '/devboxes' });
    assert.equal(missing.statusCode, 503);
    assert.match(missing.body, /npm run build:console/);
    fs.mkdirSync(path.join(dir, 'assets'));
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><div id="app"></div>');
    fs.writeFileSync(path.join(dir, 'assets', 'a-1.js'), 'export {}');
    const page = await app.inject({ method: 'GET', url: '/devboxes' });
    assert.equal(page.statusCode, 200);
    // DEVBOXD_PUBLIC_URL's origin: an object upload PUTs to the presigned URL there.
    assert.match(page.headers['content-security-policy'] as string, /connect-src 'self' https:\/\/api\.example\.com;/);
    assert.equal((await app.inject({ method: 'GET', url: '/assets/a-1.js' })).body, 'export {}');
  } finally {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
