/**
 * BoxServices without a sandbox: requests through a box's unix socket reach the routes other modules
 * register, which learn the box from the socket; unknown paths are a JSON 404; unlink closes the socket.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { BoxServices, sendJson } from '../../src/platform/boxlink/index.js';
import { StubRuntime } from '../helpers/stub-runtime.js';

let dir: string;
let runtime: StubRuntime;
let services: BoxServices;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxsvc-'));
  runtime = new StubRuntime();
  services = new BoxServices({ runtime, dataDir: dir, port: 1023, log: pino({ level: 'silent' }) });
  services.start();
});
after(async () => {
  await services.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function get(boxId: string, urlPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: services.socketPath(boxId), path: urlPath, agent: false, headers: { 'x-devbox-id': 'dbx_forged' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
}

test('routes see the calling box by its socket; the longest prefix wins; the rest is a JSON 404 or 500', async () => {
  services.route('/mcp', (req, res, boxId) => sendJson(res, 200, { route: 'mcp', boxId, url: req.url }));
  services.route('/mcp/admin', (_req, res, boxId) => sendJson(res, 200, { route: 'admin', boxId }));
  services.route('/broken', () => {
    throw new Error('boom');
  });
  assert.throws(() => services.route('/mcp', () => undefined), /taken/);
  assert.throws(() => services.route('mcp/', () => undefined), /bad box service prefix/);
  await services.link('dbx_a');
  await services.link('dbx_b');
  assert.equal(runtime.links.get('dbx_a'), services.socketPath('dbx_a'));
  assert.equal(fs.statSync(services.socketPath('dbx_a')).mode & 0o777, 0o600);

  assert.deepEqual(JSON.parse((await get('dbx_a', '/mcp?x=1')).body), { route: 'mcp', boxId: 'dbx_a', url: '/mcp?x=1' });
  assert.deepEqual(JSON.parse((await get('dbx_b', '/mcp/tools')).body), { route: 'mcp', boxId: 'dbx_b', url: '/mcp/tools' });
  assert.deepEqual(JSON.parse((await get('dbx_b', '/mcp/admin/x')).body), { route: 'admin', boxId: 'dbx_b' });
  assert.deepEqual(JSON.parse((await get('dbx_a', '/_whoami')).body), { devbox_id: 'dbx_a' });
  assert.deepEqual(await get('dbx_a', '/mcpx'), { status: 404, body: '{"message":"no box service at /mcpx"}' });
  assert.deepEqual(await get('dbx_a', '/broken'), { status: 500, body: '{"message":"the box service failed"}' });

  await services.unlink('dbx_a');
  assert.ok(!runtime.links.has('dbx_a'));
  assert.ok(!fs.existsSync(services.socketPath('dbx_a')));
  await assert.rejects(get('dbx_a', '/_whoami'), /ENOENT/);
  assert.deepEqual(services.linked(), ['dbx_b']);
});
