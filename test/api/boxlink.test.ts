/**
 * The box-services link (issue 12, item 4): inside every box, http://127.0.0.1:<DEVBOXD_BOX_SERVICES_PORT>
 * reaches the server's box services (and knows which box calls), while the devboxd API, the host and other
 * boxes stay out of reach; the link follows the box through suspend/resume and a server restart, goes with
 * it, and one hostile box cannot starve another's.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { startTestServer, type TestServer, runInBox } from '../helpers/server.js';
import { runDirOf } from '../../src/roles/layout.js';

const PORT = 1023;
const BASE = `http://127.0.0.1:${PORT}`;

let server: TestServer;
let api: Runloop;
before(async () => {
  server = await startTestServer();
  api = server.client();
});
after(async () => server?.stop());

const sh = (boxId: string, command: string) => runInBox(api, boxId, command);

const whoami = async (boxId: string) => {
  const r = await sh(boxId, `curl -sS -m 5 ${BASE}/_whoami`);
  assert.equal(r.code, 0, `curl in ${boxId} failed: ${r.err}`);
  return (JSON.parse(r.out) as { devbox_id: string }).devbox_id;
};

/** The link daemon: the node agent's child named boxlinkd. */
function linkDaemon(): number {
  for (const p of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // A killed daemon stays in /proc as a zombie (state Z) until the server reaps it: not the daemon.
      if (stat.includes('(boxlinkd)') && fields[0] !== 'Z' && Number(fields[1]) === server.agentPid()) return Number(p);
    } catch {
      /* gone meanwhile */
    }
  }
  throw new Error('no boxlinkd under the node agent');
}

/** Inodes of the sockets a process holds. */
function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' }) ?? '');
    if (m) out.add(m[1]!);
  }
  return out;
}

/** Inodes of the box's sockets on the services port (the listener and every connection's box end), seen from inside. */
async function boxPortInodes(boxId: string): Promise<string[]> {
  const hex = PORT.toString(16).toUpperCase().padStart(4, '0');
  const r = await sh(boxId, `awk '$2 == "0100007F:${hex}" && $10 != "0" { print $10 }' /proc/net/tcp`);
  assert.equal(r.code, 0, r.err);
  return r.out.split('\n').filter(Boolean);
}

describe('box services link', () => {
  test('a box reaches the box services and is told its own id; two boxes each see their own', async () => {
    const [a, b] = await Promise.all([api.devboxes.createAndAwaitRunning({}), api.devboxes.createAndAwaitRunning({})]);
    assert.equal(await whoami(a.id), a.id);
    assert.equal(await whoami(b.id), b.id);
    const r = await sh(a.id, `curl -sS -m 5 -w ' %{http_code}' ${BASE}/no/such/service`);
    assert.equal(r.out, '{"message":"no box service at /no/such/service"} 404');
    // A client that half-closes after its request still gets the whole answer (the relay passes the FIN on).
    const half = await sh(
      b.id,
      `python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", ${PORT}))
s.sendall(b"GET /_whoami HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    d = s.recv(65536)
    if not d: break
    data += d
print(data.split(b"\\r\\n")[0].decode(), data.split(b"\\r\\n\\r\\n", 1)[1].decode())
'`,
    );
    assert.equal(half.out.trim(), `HTTP/1.1 200 OK {"devbox_id":"${b.id}"}`, half.err);
    // Launch commands already see it: the link is made before they run.
    const c = await api.devboxes.createAndAwaitRunning({ launch_parameters: { launch_commands: [`curl -sS -m 5 ${BASE}/_whoami > ~/seen`] } });
    assert.equal((await sh(c.id, 'cat ~/seen')).out, JSON.stringify({ devbox_id: c.id }));
    await Promise.all([a, b, c].map((d) => api.devboxes.shutdown(d.id)));
  });

  test('nothing else of the host is reachable, and the tenant cannot take the port', async () => {
    const box = await api.devboxes.createAndAwaitRunning({ launch_parameters: { user_parameters: { username: 'root', uid: 0 } } });
    const apiPort = new URL(server.url).port;
    const r = await sh(box.id, `curl -sS -m 3 http://127.0.0.1:${apiPort}/healthz; echo "rc=$?"; ip -o addr | awk '{print $2}' | sort -u`);
    assert.match(r.out, /rc=7/, `the API answered inside the box: ${r.out}`);
    // eth0 is the box's network link (its reach is network.test.ts's); nothing else.
    assert.equal(r.out.split('\n').filter(Boolean).slice(1).join(','), 'eth0,lo', 'the box has an interface besides lo and eth0');
    // Root in the box binds neither the services port (while the link holds it, nor ever: it is below 1024)
    // nor any address on it; the socket file on the host is not in the box's view.
    const bind = await sh(
      box.id,
      `python3 -c '
import socket
for host in ("127.0.0.1", "0.0.0.0", "::1", "::"):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, ${PORT})); print("bound", host)
    except OSError as e:
        print("refused", host, e.errno)
'; ls ${path.join(server.dataDir, 'run')} 2>&1 | head -1`,
    );
    assert.doesNotMatch(bind.out, /bound/, bind.out);
    assert.equal(bind.out.match(/refused \S+ 13/g)?.length, 4, `not refused as a privileged port: ${bind.out}`);
    assert.match(bind.out, /No such file or directory/);
    assert.equal(await whoami(box.id), box.id);
    await api.devboxes.shutdown(box.id);
  });

  test('a port set at or above 1024 serves the link too, and the tenant cannot bind it while linked', async () => {
    const other = await startTestServer({ DEVBOXD_BOX_SERVICES_PORT: '47000' });
    try {
      const api2 = other.client();
      const box = await api2.devboxes.createAndAwaitRunning({ launch_parameters: { user_parameters: { username: 'root', uid: 0 } } });
      const run = async (command: string) => {
        const r = await api2.devboxes.executeSync(box.id, { command });
        return r.stdout ?? '';
      };
      assert.equal(await run('curl -sS -m 5 http://127.0.0.1:47000/_whoami'), JSON.stringify({ devbox_id: box.id }));
      const bind = await run(`python3 -c '
import socket
for host in ("127.0.0.1", "0.0.0.0"):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, 47000)); print("bound", host)
    except OSError as e:
        print("refused", host, e.errno)
'`);
      assert.equal(bind.trim(), 'refused 127.0.0.1 98\nrefused 0.0.0.0 98');
      await api2.devboxes.shutdown(box.id);
    } finally {
      await other.stop();
    }
  });

  test('the link survives suspend/resume and a server restart; after shutdown no socket or daemon fd is left', async () => {
    const box = await api.devboxes.createAndAwaitRunning({});
    const sock = path.join(runDirOf(server.dataDir), 'boxsvc', `${box.id}.sock`);
    assert.equal(fs.statSync(sock).mode & 0o777, 0o600);
    await api.devboxes.suspend(box.id);
    await api.devboxes.awaitSuspended(box.id);
    assert.ok(!fs.existsSync(sock), 'a suspended box keeps its socket');
    await api.devboxes.resume(box.id);
    await api.devboxes.awaitRunning(box.id);
    assert.equal(await whoami(box.id), box.id);

    await server.restart();
    api = server.client();
    assert.equal((await api.devboxes.retrieve(box.id)).status, 'running');
    assert.equal(await whoami(box.id), box.id);

    // A connection held open through the link while the box shuts down: its fds go too.
    await api.devboxes.executeAsync(box.id, {
      command: `python3 -c 'import socket,time; s=socket.create_connection(("127.0.0.1", ${PORT})); time.sleep(600)'`,
    });
    let inodes: string[] = [];
    for (let i = 0; i < 50 && inodes.length < 2; i++) {
      inodes = await boxPortInodes(box.id);
      await new Promise((r) => setTimeout(r, 100));
    }
    const daemon = linkDaemon();
    const held = socketInodes(daemon);
    const boxSide = inodes.filter((i) => held.has(i));
    assert.ok(boxSide.length >= 2, `the daemon holds the listener and the connection (${inodes} vs ${[...held]})`);
    const before = held.size;
    await api.devboxes.shutdown(box.id);
    assert.ok(!fs.existsSync(sock), 'the socket file outlived the box');
    let now = socketInodes(daemon);
    for (let i = 0; i < 50 && now.size > before - 3; i++) {
      await new Promise((r) => setTimeout(r, 100));
      now = socketInodes(daemon);
    }
    for (const i of boxSide) assert.ok(!now.has(i), `the daemon still holds socket ${i} of the box`);
    // The listener and both ends of the held connection.
    assert.equal(now.size, before - 3);
  });

  test('a link daemon that dies is started again and links every box again', async () => {
    const box = await api.devboxes.createAndAwaitRunning({});
    const first = linkDaemon();
    process.kill(first, 'SIGKILL');
    let again = 0;
    for (let i = 0; i < 50 && !again; i++) {
      await new Promise((r) => setTimeout(r, 100));
      try {
        again = linkDaemon();
      } catch {
        /* not yet */
      }
    }
    assert.ok(again && again !== first, 'no new boxlinkd');
    let seen = '';
    for (let i = 0; i < 20 && seen !== box.id; i++) {
      seen = await whoami(box.id).catch(() => '');
      if (seen !== box.id) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(seen, box.id);
    await api.devboxes.shutdown(box.id);
  });

  test('a box holding 1000 connections does not stop another box', async () => {
    const [hostile, other] = await Promise.all([api.devboxes.createAndAwaitRunning({}), api.devboxes.createAndAwaitRunning({})]);
    await api.devboxes.executeAsync(hostile.id, {
      command: `python3 -c '
import resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(1000):
    try:
        held.append(socket.create_connection(("127.0.0.1", ${PORT}), timeout=5))
    except OSError as e:
        pass
time.sleep(1)
# Past the per-box cap the link closes connections at once: those read EOF.
closed = 0
for s in held:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except OSError:
        pass
open("/tmp/opened", "w").write(f"{len(held)} {closed}")
time.sleep(120)
'`,
    });
    // Once the flood is in place (1000 connects done), the other box's requests still pass quickly.
    let opened = '';
    for (let i = 0; i < 100 && !opened; i++) {
      opened = (await sh(hostile.id, 'cat /tmp/opened 2>/dev/null || true')).out;
      if (!opened) await new Promise((r) => setTimeout(r, 200));
    }
    const [count, closed] = opened.split(' ').map(Number);
    assert.equal(count, 1000);
    assert.ok(closed! >= 900 && closed! < 1000, `${closed} of the held connections were closed by the link`);
    const t = performance.now();
    for (let i = 0; i < 5; i++) assert.equal(await whoami(other.id), other.id);
    assert.ok(performance.now() - t < 10_000, `5 requests of the other box took ${performance.now() - t} ms`);
    await Promise.all([hostile, other].map((d) => api.devboxes.shutdown(d.id)));
  });

  test('a connection that sends nothing is answered 408 and closed within the headers timeout', async () => {
    const box = await api.devboxes.createAndAwaitRunning({});
    const r = await sh(
      box.id,
      `python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", ${PORT}))
t = time.time()
s.settimeout(30)
data = b""
while True:
    d = s.recv(4096)
    if not d: break
    data += d
print(round(time.time() - t), data.split(b"\\r\\n")[0].decode())
'`,
    );
    assert.equal(r.code, 0, r.err);
    const [secs, ...status] = r.out.trim().split(' ');
    assert.equal(status.join(' '), 'HTTP/1.1 408 Request Timeout');
    assert.ok(Number(secs) >= 9 && Number(secs) <= 13, `closed after ${secs} s`);
    await api.devboxes.shutdown(box.id);
  });
});
