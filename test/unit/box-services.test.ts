/**
 * BoxServices without a sandbox: requests through a box's unix socket reach the routes other modules
 * register, which learn the box from the socket; unknown paths are a JSON 404; unlink closes the socket.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
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

/** Sends `request` raw, half-closes, and reads until the server closes. */
function halfClose(boxId: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(services.socketPath(boxId), () => s.end(request));
    let data = '';
    s.on('data', (d: Buffer) => (data += d.toString()));
    s.on('end', () => resolve(data));
    s.on('error', reject);
  });
}

test('a client that half-closes after its request gets the answer of a handler that answers later', async () => {
  services.route('/slow', async (_req, res, boxId) => {
    await new Promise((r) => setTimeout(r, 100));
    sendJson(res, 200, { slow: boxId });
  });
  await services.link('dbx_half');
  const answer = await halfClose('dbx_half', 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
  assert.ok(answer.endsWith('{"slow":"dbx_half"}'), answer);
  await services.unlink('dbx_half');
});

test('open makes the socket for a sandbox yet to be created: the runtime links it at create, not before', async () => {
  const target = await services.open('dbx_open');
  assert.deepEqual(target, { port: 1023, socketPath: services.socketPath('dbx_open') });
  assert.ok(!runtime.links.has('dbx_open'));
  assert.deepEqual(JSON.parse((await get('dbx_open', '/_whoami')).body), { devbox_id: 'dbx_open' });
  await runtime.create({
    id: 'dbx_open',
    hostname: 'h',
    layers: [],
    limits: { cpuCores: 1, memoryBytes: 1, diskBytes: 1, pids: 1 },
    user: { name: 'u', uid: 1 },
    services: target,
  });
  assert.equal(runtime.links.get('dbx_open'), services.socketPath('dbx_open'));
  await services.unlink('dbx_open');
  assert.ok(!runtime.links.has('dbx_open'));
  assert.ok(!fs.existsSync(services.socketPath('dbx_open')));
});

test('a listen that fails leaves no link behind', async () => {
  // A socket directory the server cannot listen in (gone): the boot fails, and the box is not reported linked.
  const broken = new BoxServices({ runtime, dataDir: path.join(dir, 'broken'), port: 1023, log: pino({ level: 'silent' }) });
  await assert.rejects(broken.link('dbx_nolisten'), /ENOENT|EACCES/);
  assert.deepEqual(broken.linked(), []);
  assert.ok(!runtime.links.has('dbx_nolisten'));
  await broken.close();
});

/** The server's CPU (this process) over `ms`, in percent of one core. */
async function cpuOver(ms: number): Promise<number> {
  const c0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, ms));
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) / 1000 / ms) * 100;
}

test('a box streaming a body into a path that does not read it is cut, and costs the server little CPU', async () => {
  await services.link('dbx_flood');
  // The flood runs in another process, so this process's CPU is the server's alone.
  const flooder = spawn(
    process.execPath,
    [
      '-e',
      `
const net = require('node:net');
const chunk = Buffer.alloc(64 * 1024, 97);
const frame = Buffer.concat([Buffer.from(chunk.length.toString(16) + '\\r\\n'), chunk, Buffer.from('\\r\\n')]);
let closed = 0, head = '';
for (let i = 0; i < 8; i++) {
  const s = net.connect(process.argv[1], () => {
    s.write('POST /nope HTTP/1.1\\r\\nHost: x\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n');
    const pump = () => { while (!s.destroyed && s.write(frame)); };
    s.on('drain', pump); pump();
  });
  s.on('data', (d) => { if (!head) head = d.toString().split('\\r\\n\\r\\n')[0]; });
  s.on('error', () => undefined);
  s.on('close', () => { if (++closed === 8) { console.log(JSON.stringify(head)); process.exit(0); } });
}
setTimeout(() => { console.log('still open: ' + (8 - closed)); process.exit(1); }, 3000);
`,
      services.socketPath('dbx_flood'),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  flooder.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const cpu = await cpuOver(1000);
  const code = await new Promise((r) => (flooder.exitCode !== null ? r(flooder.exitCode) : flooder.on('exit', r)));
  assert.equal(code, 0, `the flood's connections were not cut: ${out}`);
  const head = JSON.parse(out) as string;
  assert.match(head, /^HTTP\/1\.1 404 /);
  assert.match(head, /\r\nConnection: close/i);
  assert.ok(cpu < 20, `the server spent ${cpu.toFixed(0)} % CPU on the flood`);
  await services.unlink('dbx_flood');
});

test('a box past its body budget is slowed, not failed: its upload still arrives whole', async () => {
  const slow = new BoxServices({
    runtime,
    dataDir: path.join(dir, 'budget'),
    port: 1023,
    log: pino({ level: 'silent' }),
    bodyBudget: { bytesPerSecond: 1 << 20 },
  });
  slow.start();
  slow.route('/upload', async (req, res) => {
    let n = 0;
    for await (const d of req) n += (d as Buffer).length;
    sendJson(res, 200, { n });
  });
  await slow.link('dbx_up');
  const t0 = Date.now();
  const answer = await new Promise<string>((resolve, reject) => {
    const req = http.request({ socketPath: slow.socketPath('dbx_up'), path: '/upload', method: 'POST', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    // 3 MiB at 1 MiB/s with a burst of 1 MiB: about two seconds.
    for (let i = 0; i < 48; i++) req.write(Buffer.alloc(64 * 1024));
    req.end();
  });
  const took = Date.now() - t0;
  assert.deepEqual(JSON.parse(answer), { n: 3 << 20 });
  assert.ok(took > 1700 && took < 4000, `the 3 MiB upload took ${took} ms`);
  await slow.close();
});

test('a box opening connections faster than its rate gets the extra ones closed unread', async () => {
  const few = new BoxServices({ runtime, dataDir: path.join(dir, 'rate'), port: 1023, log: pino({ level: 'silent' }), connectionsPerSecond: 10 });
  few.start();
  await few.link('dbx_rate');
  // 40 at once: the burst (20) is answered, the rest closed before anything is read.
  const answers = await Promise.all(
    Array.from(
      { length: 40 },
      () =>
        new Promise<string>((resolve) => {
          const s = net.connect(few.socketPath('dbx_rate'), () => s.write('GET /_whoami HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
          let data = '';
          s.on('data', (d: Buffer) => (data += d.toString()));
          s.on('error', () => undefined);
          s.on('close', () => resolve(data.split('\r\n')[0]!));
        }),
    ),
  );
  const ok = answers.filter((a) => a === 'HTTP/1.1 200 OK').length;
  assert.ok(ok >= 20 && ok <= 22, `${ok} of 40 connections were answered`);
  assert.equal(answers.filter((a) => a === '').length, 40 - ok);
  await few.close();
});

test('a small body that arrives after its early answer is read, not reset: the client gets the answer and may send again', async () => {
  await services.link('dbx_late');
  const s = net.connect(services.socketPath('dbx_late'));
  await new Promise((r) => s.once('connect', r));
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString()));
  // The headers first; the 404 leaves before the body, which follows a moment later (as a client writing them
  // apart does). Closing on that answer reset the connection under the body and lost the answer.
  s.write('POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n');
  for (let i = 0; i < 100 && !got.includes('\r\n\r\n'); i++) await new Promise((r) => setTimeout(r, 10));
  s.write('{"jsonrpc":"2.0"}   ');
  s.write('GET /_whoami HTTP/1.1\r\nHost: x\r\n\r\n');
  for (let i = 0; i < 100 && !got.includes('dbx_late'); i++) await new Promise((r) => setTimeout(r, 10));
  s.destroy();
  assert.match(got, /^HTTP\/1\.1 404 /);
  assert.doesNotMatch(got.split('\r\n\r\n')[0]!, /Connection: close/i);
  assert.match(got, /"devbox_id":"dbx_late"/, 'the connection served the next request');
  await services.unlink('dbx_late');
});
