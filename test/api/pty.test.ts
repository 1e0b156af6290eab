/**
 * PTY sessions (issue 13, item 4): create_pty_tunnel, then the SDK pointed at the PTY tunnel (its /tunnel/
 * path form, and the host name form with a raw request) connects, controls and closes sessions, and a `ws`
 * client types into the shell over the WebSocket data plane. Traffic goes only to 127.0.0.1.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import Runloop from '@runloop/api-client';
import { WebSocket } from 'ws';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: Runloop;
let serverPort: number;
let boxId: string;

const AUTH = 'X-Runloop-Tunnel-Authorization';
/** What the SDK throws for a non-2xx answer. */
type ApiError = { status?: number; message: string };

/** The SDK as a user points it at a PTY tunnel: the tunnel's base URL and its token (path form). */
function ptyClient(key: string, token: string | null, opts: { maxRetries?: number } = {}): Runloop {
  return new Runloop({
    baseURL: `${server.url}/tunnel/${key}/8080`,
    bearerToken: 'unused',
    defaultHeaders: token === null ? {} : { [AUTH]: `Bearer ${token}` },
    maxRetries: opts.maxRetries ?? 0,
  });
}

/** A terminal over the data plane: what it shows so far, typing, and waiting for a pattern. */
class Terminal {
  text = '';
  /** Bytes received; `text` keeps them only while `keep` (a flood is counted, not kept). */
  bytes = 0;
  keep = true;
  closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d: Buffer) => {
      this.bytes += d.length;
      this.text = this.keep ? this.text + d.toString() : (this.text + d.toString()).slice(-4096);
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  }

  /** Attaches with the token in the header, or as a browser must, in the offered subprotocols. */
  static async open(connectUrl: string, token: string, opts: { subprotocol?: boolean } = {}): Promise<Terminal> {
    return (await Terminal.upgrade(connectUrl, token, opts)).term;
  }

  /** open, with the upgrade's answer (its raw header lines). */
  static upgrade(connectUrl: string, token: string, opts: { subprotocol?: boolean } = {}): Promise<{ term: Terminal; headers: string[] }> {
    const url = `ws://127.0.0.1:${serverPort}${connectUrl}`;
    const ws = opts.subprotocol ? new WebSocket(url, browserProtocols(token)) : new WebSocket(url, { headers: { [AUTH]: `Bearer ${token}` } });
    return new Promise((resolve, reject) => {
      let headers: string[] = [];
      ws.once('upgrade', (res) => (headers = res.rawHeaders));
      ws.once('open', () => resolve({ term: new Terminal(ws), headers }));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => reject(new Error(`attach refused: ${res.statusCode} ${res.rawHeaders.join('\n')}\n${body}`)));
      });
      ws.once('error', reject);
    });
  }

  async waitFor(re: RegExp, from = 0, ms = 15_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + ms;
    for (;;) {
      const m = this.text.slice(from).match(re);
      if (m) return m;
      if (Date.now() > deadline) assert.fail(`no ${re} on the terminal; it shows:\n${this.text.slice(from)}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 200);
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  async type(text: string, re: RegExp): Promise<RegExpMatchArray> {
    const from = this.text.length;
    this.ws.send(Buffer.from(text));
    return this.waitFor(re, from);
  }

  close(): Promise<unknown> {
    this.ws.close();
    return this.closed;
  }
}

/**
 * What a browser's WebSocket offers to attach: it can send no header, so the token rides in a subprotocol.
 * The token's entry comes first: the server must answer devboxd.pty, not the first one offered.
 */
function browserProtocols(token: string): string[] {
  return [`devboxd.tunnel-auth.${Buffer.from(token).toString('base64url')}`, 'devboxd.pty'];
}

/** A raw HTTP/1.1 request to the server with the given Host (the tunnel host name, as DNS would route it). */
function request(opts: {
  host: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: serverPort, method: opts.method ?? 'GET', path: opts.path, headers: { host: opts.host, ...opts.headers } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

before(async () => {
  server = await startTestServer({ DEVBOXD_PTY_IDLE_TTL: '60' });
  serverPort = Number(new URL(server.url).port);
  api = server.client();
  boxId = (await api.devboxes.createAndAwaitRunning({ environment_variables: { PTY_ENV: 'from-the-box' } })).id;
});
after(async () => {
  await server?.stop();
});

describe('a PTY tunnel', () => {
  test('is fresh on every call, never on the devbox view, and needs its token', async () => {
    const a = await api.devboxes.createPtyTunnel(boxId);
    const b = await api.devboxes.createPtyTunnel(boxId);
    assert.match(a.tunnel_key, /^[0-9a-f]{32}$/);
    assert.ok(a.auth_token.length >= 16);
    assert.notEqual(a.tunnel_key, b.tunnel_key);
    assert.notEqual(a.auth_token, b.auth_token);
    const view = await api.devboxes.retrieve(boxId);
    assert.doesNotMatch(JSON.stringify(view), new RegExp(a.tunnel_key));

    await assert.rejects(ptyClient(a.tunnel_key, null).pty.connect('s1'), (e: ApiError) => e.status === 401);
    await assert.rejects(ptyClient(a.tunnel_key, b.auth_token).pty.connect('s1'), (e: ApiError) => e.status === 401);
    // The host name form: the same answers.
    const host = `8080-${a.tunnel_key}.tunnel.127.0.0.1`;
    assert.equal((await request({ host, path: '/pty/s1' })).status, 401);
    const ok = await request({ host, path: '/pty/hostform', headers: { [AUTH]: `Bearer ${a.auth_token}` } });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(JSON.parse(ok.body).connect_url, '/pty/hostform/attach');
    // A box that is not running gets none; an unknown box is a 404.
    await assert.rejects(api.devboxes.createPtyTunnel('dbx_nope'), (e: ApiError) => e.status === 404);
  });

  test('bad session names, sizes and control bodies are 400s naming the field', async () => {
    const t = await api.devboxes.createPtyTunnel(boxId);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    for (const name of ['bad.name', 'a*b', 'x'.repeat(257)]) {
      await assert.rejects(pty.connect(name), (e: ApiError) => e.status === 400 && /session_name/.test(e.message), name);
    }
    await assert.rejects(pty.connect('ok', { cols: 0, rows: 24 }), (e: ApiError) => e.status === 400 && /cols/.test(e.message));
    await assert.rejects(pty.connect('ok', { cols: 80, rows: 1001 }), (e: ApiError) => e.status === 400 && /rows/.test(e.message));
    const c = await pty.connect('ok', { cols: 120 }); // one of the two: ignored
    assert.equal(c.cols, 80);
    assert.equal(c.rows, 24);
    await assert.rejects(pty.control('ok', { action: 'resize', cols: 0, rows: 10 }), (e: ApiError) => e.status === 400 && /cols/.test(e.message));
    await assert.rejects(pty.control('ok', { action: 'signal', signal: 'SIGNOPE' }), (e: ApiError) => e.status === 400 && /signal/.test(e.message));
    await assert.rejects(pty.control('ok', {}), (e: ApiError) => e.status === 400 && /action/.test(e.message));
    await assert.rejects(pty.control('never-made', { action: 'close' }), (e: ApiError) => e.status === 404);
    await pty.control('ok', { action: 'close' });
  });
});

describe('a PTY session', () => {
  test('a shell: typing, resize, signals, single attach, resume after detach, close starts fresh', async () => {
    const t = await api.devboxes.createPtyTunnel(boxId);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    const first = await pty.connect('main', { cols: 100, rows: 30 });
    assert.equal(first.created, true);
    assert.equal(first.attached, false);
    assert.deepEqual([first.cols, first.rows, first.session_name], [100, 30, 'main']);
    assert.equal(first.connect_url, `/tunnel/${t.tunnel_key}/8080/pty/main/attach`);
    assert.ok((first.idle_ttl_seconds ?? 0) > 0);

    const term = await Terminal.open(first.connect_url!, t.auth_token);
    await term.type('echo hi; tty\n', /hi\r?\n\/dev\/pts\/\d+/);
    // The box user, in its home, with the box's environment.
    await term.type('echo "who=$(id -un) at=$PWD env=$PTY_ENV"\n', /who=\S+ at=\S+ env=\S+/);
    assert.match(term.text, /who=user at=\/home\/user env=from-the-box/);
    await term.type('stty size\n', /30 100/);

    await pty.control('main', { action: 'resize', cols: 132, rows: 43 });
    await term.type('stty size\n', /43 132/);

    // SIGINT reaches the foreground `sleep 100`; the shell answers at once.
    const from = term.text.length;
    term.ws.send('sleep 100; echo "status=$?"\n');
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    await pty.control('main', { action: 'signal', signal: 'SIGINT' });
    await term.type('echo "after-$((40+2))"\n', /after-42/);
    assert.ok(Date.now() - t0 < 5000);
    assert.doesNotMatch(term.text.slice(from), /status=0/);

    // A second client is refused at the upgrade; connect still answers, attached.
    await assert.rejects(Terminal.open(first.connect_url!, t.auth_token), /409/);
    const again = await pty.connect('main');
    assert.equal(again.created, false);
    assert.equal(again.attached, true);

    // Detach and reconnect: the same shell (a variable set before is still there).
    await term.type('export MARK=kept-$((6*7))\n', /\$ $/);
    await term.close();
    const back = await pty.connect('main');
    assert.equal(back.created, false);
    assert.equal(back.attached, false);
    const term2 = await Terminal.open(back.connect_url!, t.auth_token);
    await term2.type('echo "mark=$MARK"\n', /mark=kept-42/);

    // close: the client is told, and the next connect starts a fresh shell.
    await pty.control('main', { action: 'close' });
    assert.equal((await term2.closed).code, 1000);
    const fresh = await pty.connect('main');
    assert.equal(fresh.created, true);
    const term3 = await Terminal.open(fresh.connect_url!, t.auth_token);
    await term3.type('echo "mark=[$MARK]"\n', /mark=\[\]/);

    // The shell exits (leaving a job that holds the terminal): the client is told at once, and a signal
    // now has no foreground group.
    const t1 = Date.now();
    term3.ws.send('sleep 60 & exit 3\n');
    const end = await term3.closed;
    assert.ok(Date.now() - t1 < 5000, `the client was told after ${Date.now() - t1} ms`);
    assert.equal(end.code, 1000);
    assert.match(end.reason, /status 3/);
    await assert.rejects(pty.control('main', { action: 'signal', signal: 'SIGTERM' }), (e: ApiError) => e.status === 400);
  });

  test('a browser attaches with the token as a subprotocol; a wrong one is refused like a wrong header, and the answer never shows it', async () => {
    const t = await api.devboxes.createPtyTunnel(boxId);
    const other = await api.devboxes.createPtyTunnel(boxId);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    const c = await pty.connect('browser');

    // Refused as a wrong header is, the session left free; with a header, the header alone counts.
    const refused = (e: Error) => /^attach refused: 401/.test(e.message) && !e.message.includes(other.auth_token);
    await assert.rejects(Terminal.open(c.connect_url!, other.auth_token, { subprotocol: true }), refused);
    await assert.rejects(Terminal.open(c.connect_url!, other.auth_token), refused);
    const both = new WebSocket(`ws://127.0.0.1:${serverPort}${c.connect_url}`, browserProtocols(t.auth_token), {
      headers: { [AUTH]: `Bearer ${other.auth_token}` },
    });
    const status = await new Promise((r) => both.once('unexpected-response', (_req, res) => r(res.statusCode)));
    assert.equal(status, 401);
    // The protocol form is for the data plane only: connect still needs the header.
    const encoded = browserProtocols(t.auth_token)[0]!;
    const host = `8080-${t.tunnel_key}.tunnel.127.0.0.1`;
    assert.equal((await request({ host, path: '/pty/browser', headers: { 'sec-websocket-protocol': encoded } })).status, 401);

    const { term, headers } = await Terminal.upgrade(c.connect_url!, t.auth_token, { subprotocol: true });
    assert.equal(term.ws.protocol, 'devboxd.pty');
    const answer = headers.join('\n');
    assert.ok(!answer.includes(t.auth_token) && !answer.includes(encoded.slice('devboxd.tunnel-auth.'.length)), answer);
    await term.type('echo "via-$((20+22))"\n', /via-42/);
    await term.close();
    await pty.control('browser', { action: 'close' });
  });

  test('sessions of a box end when it suspends; after resume a connect starts fresh', async () => {
    const t = await api.devboxes.createPtyTunnel(boxId);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    const c = await pty.connect('lives');
    const term = await Terminal.open(c.connect_url!, t.auth_token);
    await term.type('export MARK=before\n', /\$ $/);
    await api.devboxes.suspend(boxId);
    await api.devboxes.awaitSuspended(boxId);
    assert.equal((await term.closed).code, 1001);
    await assert.rejects(pty.connect('lives'), (e: ApiError) => e.status === 400);
    await api.devboxes.resume(boxId);
    await api.devboxes.awaitRunning(boxId);
    const after = await pty.connect('lives');
    assert.equal(after.created, true);
    const term2 = await Terminal.open(after.connect_url!, t.auth_token);
    await term2.type('echo "mark=[$MARK]"\n', /mark=\[\]/);
    await term2.close();
  });
});

describe('flow and activity', () => {
  test('a client that reads nothing holds the shell at its next write; once it reads, every byte arrives', async () => {
    const t = await api.devboxes.createPtyTunnel(boxId);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    const c = await pty.connect('flood');
    const term = await Terminal.open(c.connect_url!, t.auth_token);
    await term.type('stty -echo; echo "ready-$((40+2))"\n', /ready-42/);
    // 64 MiB of output (well past what the buffers on the way hold, below), its progress written to a file
    // outside the terminal.
    const TOTAL = 64 << 20;
    const writer =
      `python3 -c 'import sys,os\nn=0\nb=b"x"*65536\nwhile n<${TOTAL}:\n os.write(1,b); n+=len(b)\n ` +
      `open("/tmp/progress","w").write(str(n))\nos.write(1,b"\\r\\nflood-"+b"done\\r\\n")'\n`;
    const sock = (term.ws as unknown as { _socket: import('node:net').Socket })._socket;
    term.keep = false;
    const before = term.bytes;
    sock.pause(); // the client stops reading: the server's sends wait on TCP
    term.ws.send(writer);
    const progress = async () => Number((await api.devboxes.executeSync(boxId, { command: 'cat /tmp/progress 2>/dev/null || echo 0' })).stdout);
    const deadline = Date.now() + 30_000;
    while ((await progress()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 3000));
    const held = await progress();
    await new Promise((r) => setTimeout(r, 3000));
    const later = await progress();
    // Bounded by the buffers on the way (terminal, relay, sockets): a few MiB, then the shell waits.
    assert.ok(held > 0 && held < 24 << 20, `the shell wrote ${held} bytes for a client that read nothing`);
    assert.equal(later, held, 'the shell waits while the client reads nothing');
    sock.resume();
    await term.waitFor(/flood-done/, 0, 120_000);
    assert.ok(term.bytes - before >= TOTAL, `${term.bytes - before} bytes arrived`);
    await term.close();
    await pty.control('flood', { action: 'close' });
  });

  test('an attached client keeps a box from idling; once it detaches the box idles', async () => {
    const box = await api.devboxes.createAndAwaitRunning({ launch_parameters: { after_idle: { idle_time_seconds: 3, on_idle: 'shutdown' } } });
    const t = await api.devboxes.createPtyTunnel(box.id);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    const c = await pty.connect('busy');
    const term = await Terminal.open(c.connect_url!, t.auth_token);
    await new Promise((r) => setTimeout(r, 6000));
    assert.equal((await api.devboxes.retrieve(box.id)).status, 'running', 'an attached terminal is activity');
    await term.close();
    const deadline = Date.now() + 15_000;
    while ((await api.devboxes.retrieve(box.id)).status === 'running' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const ended = await api.devboxes.retrieve(box.id);
    assert.equal(ended.shutdown_reason, 'idle');
    // Its tunnels went with it.
    await assert.rejects(pty.connect('busy'), (e: ApiError) => e.status === 404);
  });
});

describe('a server restart', () => {
  test('keeps tunnels and sessions: the same shell, its jobs and what it printed meanwhile', async () => {
    const t = await api.devboxes.createPtyTunnel(boxId);
    const pty = ptyClient(t.tunnel_key, t.auth_token).pty;
    const c = await pty.connect('survivor', { cols: 101, rows: 31 });
    const term = await Terminal.open(c.connect_url!, t.auth_token);
    const [, pid] = await term.type('export MARK=kept-$((6*7)); sleep 600 & echo "job=$!"\n', /job=(\d+)/);
    // Printed while no server runs: it waits in the terminal for the next client.
    await term.type('(sleep 2; echo "meanwhile-$((5*5))") & echo "bg=$((3*3))"\n', /bg=9/);
    const closed = term.closed;
    await server.restart();
    assert.equal((await closed).code, 1006, 'the client lost its server');

    const back = await ptyClient(t.tunnel_key, t.auth_token).pty.connect('survivor');
    assert.equal(back.created, false, 'the session is found again');
    assert.deepEqual([back.cols, back.rows, back.attached], [101, 31, false]);
    const again = await Terminal.open(back.connect_url!, t.auth_token);
    await again.waitFor(/meanwhile-25/);
    await again.type(`echo "mark=$MARK"; kill -0 ${pid} && echo "still-$((${pid}+0))"\n`, new RegExp(`still-${pid}`));
    assert.match(again.text, /mark=kept-42/);
    // Closed as any session: the client is told, and the next connect starts afresh.
    await pty.control('survivor', { action: 'close' });
    assert.equal((await again.closed).code, 1000);
    assert.equal((await pty.connect('survivor')).created, true);
    await pty.control('survivor', { action: 'close' });
    // A token that is not the tunnel's is still refused after the restart.
    await assert.rejects(ptyClient(t.tunnel_key, 'wrong').pty.connect('survivor'), (e: ApiError) => e.status === 401);
  });
});

describe('idle TTL', () => {
  let short: TestServer;
  before(async () => {
    short = await startTestServer({ DEVBOXD_PTY_IDLE_TTL: '2' });
  });
  after(async () => {
    await short?.stop();
  });

  test('a session outlives its last client by the TTL, then the next connect starts fresh', async () => {
    const sapi = short.client();
    const box = await sapi.devboxes.createAndAwaitRunning({});
    const t = await sapi.devboxes.createPtyTunnel(box.id);
    const pty = new Runloop({
      baseURL: `${short.url}/tunnel/${t.tunnel_key}/8080`,
      bearerToken: 'x',
      defaultHeaders: { [AUTH]: `Bearer ${t.auth_token}` },
      maxRetries: 0,
    }).pty;
    const c = await pty.connect('ttl');
    assert.equal(c.idle_ttl_seconds, 2);
    const ws = new WebSocket(`ws://127.0.0.1:${new URL(short.url).port}${c.connect_url}`, { headers: { [AUTH]: `Bearer ${t.auth_token}` } });
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    await new Promise((r) => setTimeout(r, 3000)); // attached: the TTL does not run
    assert.equal((await pty.connect('ttl')).created, false);
    ws.close();
    await new Promise((r) => ws.once('close', r));
    await new Promise((r) => setTimeout(r, 1000)); // within the TTL: the same shell
    assert.equal((await pty.connect('ttl')).created, false);
    await new Promise((r) => setTimeout(r, 3500)); // past it (counted again from that connect, which attached nothing)
    assert.equal((await pty.connect('ttl')).created, true);
  });

  test('a session nobody reattaches after a restart is hung up once the TTL passed, its jobs with it', async () => {
    const sapi = short.client();
    const box = await sapi.devboxes.createAndAwaitRunning({});
    const t = await sapi.devboxes.createPtyTunnel(box.id);
    const pty = () =>
      new Runloop({
        baseURL: `${short.url}/tunnel/${t.tunnel_key}/8080`,
        bearerToken: 'x',
        defaultHeaders: { [AUTH]: `Bearer ${t.auth_token}` },
        maxRetries: 0,
      }).pty;
    const c = await pty().connect('left');
    const ws = new WebSocket(`ws://127.0.0.1:${new URL(short.url).port}${c.connect_url}`, { headers: { [AUTH]: `Bearer ${t.auth_token}` } });
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    let shown = '';
    ws.on('message', (d: Buffer) => (shown += d.toString()));
    ws.send('sleep 777 & echo "bg=$((7*7))"\n');
    while (!shown.includes('bg=49')) await new Promise((r) => setTimeout(r, 100));
    await short.restart({ whileDown: () => new Promise((r) => setTimeout(r, 3000)) }); // down longer than the TTL (2 s)
    assert.equal((await pty().connect('left')).created, true, 'a fresh shell');
    const left = await short.client().devboxes.executeSync(box.id, { command: 'pgrep -c -f "^sleep 777$"' });
    assert.equal(left.stdout.trim(), '0', 'the old shell and its job are gone');
  });
});
