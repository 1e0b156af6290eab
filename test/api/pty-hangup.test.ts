/**
 * PTY sessions against what outlives them (review 5: H1, M1, L4): a closed session ends its host relay even
 * while a box process that left the shell's session holds the terminal; an attached client that stops
 * answering pings is dropped, freeing the session for the next one; a box cannot swap a terminal's line
 * discipline. The SDK connects and closes; a `ws` client attaches. Traffic goes only to 127.0.0.1.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import Runloop from '@runloop/api-client';
import { WebSocket } from 'ws';
import { startTestServer, type TestServer } from '../helpers/server.js';

const AUTH = 'X-Runloop-Tunnel-Authorization';
let server: TestServer;
let api: Runloop;
let boxId: string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** boxexecd processes of this server: the daemon and one relay per command (their command line names its socket). */
function execdProcesses(): number {
  let n = 0;
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (cmd.includes('boxexecd') && cmd.includes(server.dataDir)) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

async function tunnel(): Promise<{ pty: Runloop['pty']; token: string; prefix: string }> {
  const t = await api.devboxes.createPtyTunnel(boxId);
  const prefix = `/tunnel/${t.tunnel_key}/8080`;
  const sdk = new Runloop({ baseURL: `${server.url}${prefix}`, bearerToken: 'unused', defaultHeaders: { [AUTH]: `Bearer ${t.auth_token}` }, maxRetries: 0 });
  return { pty: sdk.pty, token: t.auth_token, prefix };
}

function attach(connectUrl: string, token: string, opts: { autoPong?: boolean } = {}): Promise<WebSocket> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}${connectUrl}`, { headers: { [AUTH]: `Bearer ${token}` }, autoPong: opts.autoPong ?? true });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`attach refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** Types `line` and waits until the terminal shows `mark`. */
function typeUntil(ws: WebSocket, line: string, mark: string): Promise<void> {
  let seen = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no ${mark} on the terminal; it shows:\n${seen}`)), 15_000);
    ws.on('message', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes(mark)) {
        clearTimeout(t);
        resolve();
      }
    });
    ws.send(Buffer.from(line));
  });
}

before(async () => {
  server = await startTestServer({ DEVBOXD_PTY_PING_INTERVAL: '1' });
  api = server.client();
  boxId = (await api.devboxes.createAndAwaitRunning({})).id;
});
after(async () => {
  await server?.stop();
});

test('closed sessions leave no relay behind while box processes that left the shell hold their terminals', { timeout: 300_000 }, async () => {
  const { pty, token } = await tunnel();
  const baseline = execdProcesses();
  assert.ok(baseline >= 1, 'the exec daemon of this server is found');
  // More sessions than a box holds at once (32): closed ones must not count, nor stay on the host.
  for (let i = 0; i < 40; i++) {
    const c = await pty.connect(`s${i}`);
    const ws = await attach(c.connect_url!, token);
    await typeUntil(ws, `setsid -f sleep 100000; echo held-$((${i} * 7))\n`, `held-${i * 7}`);
    ws.close();
    await pty.control(`s${i}`, { action: 'close' });
  }
  let left = execdProcesses() - baseline;
  for (let i = 0; i < 50 && left > 0; i++) {
    await sleep(200);
    left = execdProcesses() - baseline;
  }
  assert.equal(left, 0, 'relays of closed sessions still run on the host');
  // The holders are still there: only the terminal they held was hung up.
  const held = await api.devboxes.executeSync(boxId, { command: 'pgrep -c -f "sleep 100000"' });
  assert.equal(held.stdout.trim(), '40');
  await api.devboxes.executeSync(boxId, { command: 'pkill -f "sleep 100000"; true' });
});

test('a shell that exits while a process it left holds the terminal ends its relay by itself', { timeout: 60_000 }, async () => {
  const { pty, token } = await tunnel();
  const baseline = execdProcesses();
  const c = await pty.connect('leaves');
  const ws = await attach(c.connect_url!, token);
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  await typeUntil(ws, `setsid -f sleep 100001; echo left-$((5 * 9))\n`, 'left-45');
  assert.equal(execdProcesses(), baseline + 1);
  ws.send('exit\n');
  assert.equal(await closed, 1000);
  let left = execdProcesses() - baseline;
  for (let i = 0; i < 25 && left > 0; i++) {
    await sleep(200);
    left = execdProcesses() - baseline;
  }
  assert.equal(left, 0, 'the relay of an exited shell still runs');
  const held = await api.devboxes.executeSync(boxId, { command: 'pgrep -c -f "sleep 100001"' });
  assert.equal(held.stdout.trim(), '1');
  await api.devboxes.executeSync(boxId, { command: 'pkill -f "sleep 100001"; true' });
});

test('an attached client that stops answering pings is dropped, and the next one attaches', { timeout: 60_000 }, async () => {
  const { pty, token } = await tunnel();
  const c = await pty.connect('quiet');
  // A client that answers stays attached over several ping intervals (1 s here).
  const live = await attach(c.connect_url!, token);
  await sleep(3500);
  assert.equal(live.readyState, WebSocket.OPEN);
  assert.equal((await pty.connect('quiet')).attached, true);
  live.close();
  await new Promise((r) => live.once('close', r));

  // A half-open client: connected, silent, answering no ping.
  const dead = await attach(c.connect_url!, token, { autoPong: false });
  const closed = new Promise<number>((r) => dead.once('close', (code) => r(code)));
  await assert.rejects(attach(c.connect_url!, token), /409/);
  const started = Date.now();
  const code = await closed;
  assert.ok(Date.now() - started < 5000, 'dropped within a couple of intervals');
  assert.equal(code, 1006); // terminated, no closing handshake
  const next = await attach(c.connect_url!, token);
  await typeUntil(next, 'echo back-$((6 * 7))\n', 'back-42');
  next.close();
  await pty.control('quiet', { action: 'close' });
});

test('a box cannot set a line discipline on its terminals (TIOCSETD)', async () => {
  const probe = [
    'import fcntl, os, struct, errno',
    'm, s = os.openpty()',
    'try:',
    '    fcntl.ioctl(s, 0x5423, struct.pack("i", 0))',
    '    print("allowed")',
    'except OSError as e:',
    '    print(errno.errorcode[e.errno])',
  ].join('\n');
  const r = await api.devboxes.executeSync(boxId, { command: `python3 -c '${probe}'` });
  assert.equal(r.stdout.trim(), 'EPERM', r.stderr ?? '');
  // The terminal still works as one: TIOCGETD reads N_TTY.
  const get = await api.devboxes.executeSync(boxId, {
    command: `python3 -c 'import fcntl, os, struct; m, s = os.openpty(); print(struct.unpack("i", fcntl.ioctl(s, 0x5424, b"    "))[0])'`,
  });
  assert.equal(get.stdout.trim(), '0', get.stderr ?? '');
});
