import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { ADMIN_KEY } from '../helpers/server.js';

/**
 * Connections and streams under abuse (issue 30), over real sockets on 127.0.0.1 against the in-process server:
 * headers that never finish, HTTP/2 rapid reset, cancelled streams, HEAD of live streams. Around it all, the
 * server's sockets (the kernel's TCP table) and the files it holds open in its data dir are counted.
 */
/** Small limits, so each case takes well under a second: headers timeout, pending caps, resets per 10 s. */
const [HEADERS_MS, PER_ADDRESS, TOTAL, RESETS] = [300, 4, 6, 50];

let f: FastApp;
let port: number;
let url: string;
let stdoutPath: string;
let filesBefore: number;
const auth = { authorization: `Bearer ${ADMIN_KEY}` };

/**
 * The server's open TCP sockets (local port = its port): established (01) or with the client gone and the
 * server not yet closed (08, CLOSE-WAIT). A socket the server closed (TIME-WAIT and the like) is the kernel's.
 */
function serverSockets(): string[] {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const rows = ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((p) => fs.readFileSync(p, 'utf8').split('\n').slice(1));
  return rows
    .map((l) => l.trim().split(/\s+/))
    .filter((c) => c[1]?.endsWith(hex) && (c[3] === '01' || c[3] === '08'))
    .map((c) => c[3]!);
}

/** Files of the data dir this process holds open (/proc/self/fd). */
function openFiles(): string[] {
  return fs
    .readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    })
    .filter((l) => l.startsWith(f.dataDir));
}

async function until(what: string, cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** When each socket connected: the server's deadline runs from there, not from when a test starts reading. */
const connectedAt = new WeakMap<net.Socket, number>();

function connect(localAddress = '127.0.0.1'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => {
      connectedAt.set(s, Date.now());
      resolve(s);
    });
    s.on('error', reject);
  });
}

/** Everything the server sends until it closes the socket, and how long that took from its connection. */
function drain(s: net.Socket): Promise<{ text: string; ms: number }> {
  const t0 = connectedAt.get(s) ?? Date.now();
  let text = '';
  s.on('data', (d) => (text += String(d)));
  s.on('error', () => undefined);
  return new Promise((r) => s.on('close', () => r({ text, ms: Date.now() - t0 })));
}

before(async () => {
  f = await buildFastApp({
    env: {
      DEVBOXD_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      DEVBOXD_PENDING_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      DEVBOXD_PENDING_CONNECTIONS: String(TOTAL),
      DEVBOXD_H2_MAX_RESETS: String(RESETS),
    },
  });
  f.runtime.run = (spec) => (spec.argv.join(' ').includes('live-forever') ? { hang: true, liveStdout: 'hello\n' } : {});
  url = await f.app.listen({ host: '127.0.0.1', port: 0 });
  port = Number(new URL(url).port);
  filesBefore = openFiles().length;
  assert.deepEqual(serverSockets(), []);
});

after(async () => {
  // The app closes whatever the checks find: one left open (a running execution, a listening socket) would
  // keep the process, and in a group the whole group, from ending.
  try {
    // Every client of this file is gone: the server holds no socket and no more files than at the start.
    await until('the server to close every socket', () => serverSockets().length === 0);
    // Output files stay open once, by their running execution's writer; no stream still holds one. A stream
    // whose client just left closes its file asynchronously (a busy host showed it a moment late): waited for.
    const streamsDone = () => {
      const outputs = openFiles().filter((p) => p.includes('/executions/'));
      return new Set(outputs).size === outputs.length;
    };
    await until('the streams to close their output files', streamsDone).catch(() => undefined);
    const files = openFiles();
    const outputs = files.filter((p) => p.includes('/executions/'));
    assert.equal(files.length - outputs.length, filesBefore, files.join('\n'));
    assert.equal(new Set(outputs).size, outputs.length, outputs.join('\n'));
  } finally {
    await f?.close();
  }
});

/** A running execution with output on disk, and the paths of its live streams. */
async function running(): Promise<{ stream: string; tail: string; sse: string; file: string }> {
  const box = (await f.call({ method: 'POST', url: '/v1/devboxes', payload: {} })).json() as { id: string };
  const me = ((await f.call({ method: 'GET', url: '/v1/accounts/me' })).json() as { id: string }).id;
  await f.deps.devboxes.waitForStatus(me, box.id, ['running'], 10_000);
  const ex = (await f.call({ method: 'POST', url: `/v1/devboxes/${box.id}/execute_async`, payload: { command: 'live-forever' } })).json() as {
    execution_id: string;
  };
  const axon = (await f.call({ method: 'POST', url: '/v1/axons', payload: {} })).json() as { id: string };
  stdoutPath = `${f.dataDir}/executions/${box.id}/${ex.execution_id}.stdout`;
  await until('the execution output', () => fs.existsSync(stdoutPath) && fs.statSync(stdoutPath).size > 0);
  return {
    stream: `/v1/devboxes/${box.id}/executions/${ex.execution_id}/stream_stdout_updates`,
    tail: `/v1/devboxes/${box.id}/logs/tail`,
    sse: `/v1/axons/${axon.id}/subscribe/sse`,
    file: stdoutPath,
  };
}

test('headers that never finish get a 408 (HTTP/1.1) or a closed session (HTTP/2) within the headers timeout', async () => {
  const h1 = await connect();
  h1.write(`GET /v1/accounts/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n`);
  const silent = await connect();
  const h2 = await connect();
  h2.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00'); // preface and empty SETTINGS, no stream
  const [a, b, c] = await Promise.all([drain(h1), drain(silent), drain(h2)]);
  assert.match(a.text, /^HTTP\/1.1 408 /);
  // Node's periodic connection check names the headers' deadline, or, when a loaded run made the check late
  // enough that the request's deadline passed too, the request's: a 408 either way.
  assert.match(a.text, /(request|request headers) did not arrive in time/);
  for (const r of [a, b, c]) assert.ok(r.ms >= HEADERS_MS - 50 && r.ms < HEADERS_MS + 1500, String(r.ms));

  // A keep-alive connection's next request is held to the same deadline (Node's own check).
  const again = await connect();
  again.write(`GET /v1/accounts/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n\r\nGET /v1/accounts/me HTTP/1.1\r\nHost: x\r\n`);
  const r = await drain(again);
  assert.match(r.text, /^HTTP\/1.1 200 [\s\S]*HTTP\/1.1 408 /);
});

test('connections not yet past their headers are capped per address and in all; the rest of the server answers', async () => {
  const held = await Promise.all(Array.from({ length: PER_ADDRESS }, () => connect()));
  const over = drain(await connect());
  assert.ok((await over).ms < HEADERS_MS, 'a connection over the per-address cap is closed at once');
  // Another address still gets in, up to the total.
  const other = await Promise.all(Array.from({ length: TOTAL - PER_ADDRESS }, () => connect('127.0.0.2')));
  assert.ok((await drain(await connect('127.0.0.3'))).ms < HEADERS_MS, 'a connection over the total cap is closed at once');
  for (const s of [...held, ...other]) s.destroy();
  await until('the held connections to go', () => serverSockets().length === 0);
  const status = await new Promise((r) => http.get(`${url}/v1/accounts/me`, { headers: auth, agent: false }, (res) => r(res.resume().statusCode)));
  assert.equal(status, 200);
});

test('HTTP/2 rapid reset: GOAWAY ENHANCE_YOUR_CALM past the bound, and every such session closes its socket', async () => {
  for (let round = 0; round < 3; round++) {
    const c = http2.connect(url);
    c.on('error', () => undefined);
    let goaway: number | undefined;
    c.on('goaway', (code) => (goaway = code));
    await new Promise((r) => c.once('connect', r));
    let sent = 0;
    for (; sent < 2000 && goaway === undefined && !c.destroyed; sent++) {
      const s = c.request({ ':path': '/v1/accounts/me', ...auth });
      s.on('error', () => undefined);
      s.close(http2.constants.NGHTTP2_CANCEL);
      if (sent % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    await until('the GOAWAY', () => goaway !== undefined);
    assert.equal(goaway, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    assert.ok(sent < 1000, String(sent));
    c.destroy();
  }
  // Streams cancelled once they answered (SSE subscriptions a client gives up): the same bound, and the server
  // ends the session rather than spinning (destroying it from within the stream's close callback did).
  const axon = (await f.call({ method: 'POST', url: '/v1/axons', payload: {} })).json() as { id: string };
  const c = http2.connect(url);
  c.on('error', () => undefined);
  let goaway: number | undefined;
  c.on('goaway', (code) => (goaway = code));
  for (let i = 0; i <= RESETS && goaway === undefined; i++) {
    const s = c.request({ ':path': `/v1/axons/${axon.id}/subscribe/sse`, ...auth });
    s.on('error', () => undefined);
    await new Promise((r) => s.once('data', r).once('close', r));
    s.close(http2.constants.NGHTTP2_CANCEL);
  }
  await until('the GOAWAY', () => goaway !== undefined);
  assert.equal(goaway, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  c.destroy();
  await until('no socket left (none in CLOSE-WAIT)', () => serverSockets().length === 0);
});

test('cancelled HTTP/2 streams and destroyed sessions release the output file at once, as HTTP/1.1 does', async () => {
  const { stream, file } = await running();
  // The execution's writer holds the file too while it runs: what the streams hold is counted above that.
  const writer = openFiles().filter((p) => p === file).length;
  const holding = () => openFiles().filter((p) => p === file).length - writer;
  const open = (c: http2.ClientHttp2Session) => {
    const s = c.request({ ':path': stream, ...auth });
    s.on('error', () => undefined);
    return new Promise<http2.ClientHttp2Stream>((r) => s.on('data', (d) => String(d).includes('hello') && r(s)));
  };
  const c = http2.connect(url);
  const cancelled = await Promise.all(Array.from({ length: 10 }, () => open(c)));
  assert.ok(holding() >= 10, String(holding()));
  for (const s of cancelled) s.close(http2.constants.NGHTTP2_CANCEL);
  await until('the files of reset streams to close', () => holding() === 0, 1000);
  await Promise.all(Array.from({ length: 10 }, () => open(c)));
  c.destroy();
  await until('the files of a destroyed session to close', () => holding() === 0, 1000);
  // HTTP/1.1: the socket closes.
  const s = await connect();
  s.write(`GET ${stream} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n\r\n`);
  await new Promise<void>((r) => s.on('data', (d) => String(d).includes('hello') && r()));
  assert.equal(holding(), 1);
  s.destroy();
  await until('the file of a closed HTTP/1.1 stream to close', () => holding() === 0, 1000);
});

test('HEAD of a live stream answers its headers at once on both protocols; GET still streams past the headers timeout', async () => {
  const paths = await running();
  for (const p of [paths.stream, paths.tail, paths.sse]) {
    const s = await connect();
    s.write(`HEAD ${p} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nConnection: close\r\n\r\n`);
    const r = await drain(s);
    assert.match(r.text, /^HTTP\/1.1 200 [\s\S]*text\/event-stream/, p);
    assert.ok(r.ms < 1000, `${p}: ${r.ms} ms`);
    const c = http2.connect(url);
    const h = c.request({ ':path': p, ':method': 'HEAD', ...auth });
    const [headers] = await Promise.all([new Promise<http2.IncomingHttpHeaders>((r) => h.on('response', r)), new Promise((r) => h.on('end', r).resume())]);
    assert.equal(headers[':status'], 200, p);
    c.destroy();
  }
  // Long-lived streams are not cut by the headers timeout once their headers are in.
  const c = http2.connect(url);
  const g = c.request({ ':path': paths.stream, ...auth });
  let closed = false;
  g.on('close', () => (closed = true));
  await new Promise((r) => g.on('data', (d) => String(d).includes('hello') && r(0)));
  const s = await connect();
  s.write(`GET ${paths.stream} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n\r\n`);
  let h1closed = false;
  s.on('close', () => (h1closed = true));
  await sleep(HEADERS_MS * 3);
  assert.equal(closed, false);
  assert.equal(h1closed, false);
  c.destroy();
  s.destroy();
});
