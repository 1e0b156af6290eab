/**
 * The node agent's RPC against the real Linux driver: a NodeAgent on a unix socket, a RemoteRuntime talking to
 * it, and what a caller of the driver notices — the same answers as in process, flow control end to end,
 * terminals held across a lost call, and an agent that restarts under live sandboxes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { type BoxProcess, type RuntimeDriver, type Sandbox, SandboxError, type SandboxSpec } from '../../src/runtime/driver.js';
import { createRuntime } from '../../src/runtime/index.js';
import { NodeAgent } from '../../src/runtime/rpc/agent.js';
import { nodeService, PROTOCOL } from '../../src/runtime/rpc/protocol.js';
import { RemoteRuntime } from '../../src/runtime/rpc/remote-runtime.js';
import { ROOT } from '../helpers/server.js';

const quiet = { info() {}, warn() {}, error() {} };
const MiB = 1024 * 1024;
const TOKEN = 'cluster-token-for-tests';
/** Unique per run: a run killed midway leaves a cgroup of its name behind. */
const BOX = `rpc-${process.pid}`;

let dataDir: string;
let socket: string;
let local: RuntimeDriver;
let agent: NodeAgent;
let remote: RemoteRuntime;
const made: Sandbox[] = [];

async function startAgent(): Promise<void> {
  local = createRuntime({ dataDir, imageDir: join(ROOT, 'data/images'), logger: quiet });
  agent = new NodeAgent({ driver: local, node: 'n1', token: TOKEN, log: quiet });
  await agent.listen(`unix://${socket}`);
}

function spec(id: string): SandboxSpec {
  return {
    id,
    hostname: `host-${id}`,
    layers: [],
    limits: { cpuCores: 1, memoryBytes: 256 * MiB, diskBytes: 512 * MiB, pids: 256 },
    user: { name: 'user', uid: 1000 },
  };
}

/** A CA, a server pair for 127.0.0.1 and a client pair, made with openssl. */
function tlsFiles(dir: string) {
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-subj',
    '/CN=test-ca',
    '-days',
    '1',
  );
  for (const [name, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`);
    writeFileSync(f(`${name}.ext`), `${ext}\n`);
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.crt`),
      '-days',
      '1',
      '-extfile',
      f(`${name}.ext`),
    );
  }
  const read = (n: string) => readFileSync(f(n));
  return { ca: read('ca.crt'), serverCert: read('server.crt'), serverKey: read('server.key'), clientCert: read('client.crt'), clientKey: read('client.key') };
}

async function output(p: BoxProcess): Promise<{ out: string; err: string; code: number | null }> {
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const ended = Promise.all([new Promise((r) => p.stdout.on('end', r)), new Promise((r) => p.stderr.on('end', r))]);
  const exit = await p.exited;
  await ended;
  return { out, err, code: exit.exitCode };
}

describe('node agent RPC', { timeout: 240_000 }, () => {
  let box: Sandbox;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'devboxd-rpc-'));
    socket = join(dataDir, 'node.sock');
    await startAgent();
    remote = await RemoteRuntime.connect({ address: `unix:${socket}`, token: TOKEN });
    await remote.prepare();
    box = await remote.create(spec(BOX));
    made.push(box);
  });

  after(async () => {
    for (const b of made) await b.destroy().catch(() => undefined);
    await remote?.close();
    await agent?.close();
    await local?.close?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('between hosts: TLS with client certificates, and nothing in the clear', async () => {
    const pki = tlsFiles(dataDir);
    const tcp = new NodeAgent({ driver: local, node: 'n1', token: TOKEN, log: quiet });
    const port = await tcp.listen('127.0.0.1:0', grpc.ServerCredentials.createSsl(pki.ca, [{ cert_chain: pki.serverCert, private_key: pki.serverKey }], true));
    try {
      const address = `https://127.0.0.1:${port}`;
      const mutual = await RemoteRuntime.connect({ address, token: TOKEN, credentials: grpc.credentials.createSsl(pki.ca, pki.clientKey, pki.clientCert) });
      assert.ok((await mutual.listSandboxes()).includes(BOX));
      await mutual.close();
      // Without a client certificate, or in the clear, the handshake fails before any call.
      await assert.rejects(RemoteRuntime.connect({ address, token: TOKEN, credentials: grpc.credentials.createSsl(pki.ca), readyTimeoutMs: 3_000 }));
      await assert.rejects(RemoteRuntime.connect({ address: `http://127.0.0.1:${port}`, token: TOKEN, readyTimeoutMs: 3_000 }));
    } finally {
      tcp.forceClose();
    }
  });

  it('refuses a caller without the cluster token', async () => {
    await assert.rejects(RemoteRuntime.connect({ address: `unix:${socket}`, token: 'wrong', readyTimeoutMs: 5_000 }), /cluster token/);
  });

  it('answers as the driver in process: hello, stdio, exit, stderr, errors', async () => {
    assert.equal(remote.baseImageName, local.baseImageName);
    assert.equal(remote.node, 'n1');
    const p = box.spawn({ argv: ['sh', '-c', 'cat; echo err >&2; exit 3'] });
    p.stdin.end('hello through the agent\n');
    assert.deepEqual(await output(p), { out: 'hello through the agent\n', err: 'err\n', code: 3 });
    assert.throws(() => box.spawn({ argv: ['echo', 'a\0b'] }), TypeError);
    await assert.rejects(remote.openPort(BOX, 80), (err: Error) => err instanceof SandboxError && err.code === 'not_found');
    assert.ok((await remote.listSandboxes()).includes(BOX));
  });

  it('carries 64 MiB to a slow reader, and a reader that stops blocks the command (flow control end to end)', async () => {
    const p = box.spawn({ argv: ['sh', '-c', `head -c ${64 * MiB} /dev/zero; touch /tmp/all-written`] });
    p.stdin.end();
    const it = p.stdout[Symbol.asyncIterator]();
    let total = ((await it.next()).value as Buffer).length;
    await new Promise((r) => setTimeout(r, 1_000));
    const probe = box.spawn({ argv: ['sh', '-c', 'test -e /tmp/all-written && echo written || echo blocked'] });
    probe.stdin.end();
    assert.equal((await output(probe)).out, 'blocked\n');
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      total += (next.value as Buffer).length;
    }
    assert.equal(total, 64 * MiB);
    assert.equal((await p.exited).exitCode, 0);
  });

  it('signals, resizes a terminal, and reattaches a held one after its call is gone', async () => {
    const sleeper = box.spawn({ argv: ['sleep', '60'] });
    sleeper.signal('SIGTERM', true);
    assert.equal((await sleeper.exited).signal, 'SIGTERM');

    const tty = box.spawn({ argv: ['sh', '-c', 'read x; stty size; echo "got $x"'], tty: { cols: 80, rows: 24 }, hold: { key: 'k1', ms: 60_000 } });
    tty.resize(100, 30);
    await new Promise((r) => setTimeout(r, 200));
    // The API server goes away (its calls are lost, not closed): the held terminal waits for the next one.
    await remote.close();
    remote = await RemoteRuntime.connect({ address: `unix:${socket}`, token: TOKEN });
    box = (await remote.adopt(spec(BOX)))!;
    made.push(box);
    assert.deepEqual(await box.heldTerminals(), ['k1']);
    const held = await box.reattach('k1');
    assert.ok(held);
    assert.deepEqual([held.cols, held.rows], [100, 30]);
    held.proc.stdin.write('again\n');
    let screen = '';
    held.proc.stdout.on('data', (d: Buffer) => (screen += d.toString()));
    await held.proc.exited;
    assert.match(screen, /30 100/);
    assert.match(screen, /got again/);
    assert.equal(await box.reattach('nothing-here'), null);

    // Closed, rather than lost: the terminal is ended, held or not.
    const closed = box.spawn({ argv: ['sleep', '60'], tty: { cols: 80, rows: 24 }, hold: { key: 'k2', ms: 60_000 } });
    await new Promise((r) => setTimeout(r, 200));
    closed.close();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await box.reattach('k2'), null);
  });

  it('snapshots, measures and lists ports', async () => {
    const w = box.spawn({ argv: ['sh', '-c', 'echo kept > ~/kept.txt'] });
    w.stdin.end();
    await w.exited;
    const { sizeBytes } = await box.snapshot('rpc-layer-1');
    assert.ok(sizeBytes > 0);
    assert.equal(await remote.layerExists('rpc-layer-1'), true);
    assert.ok((await remote.layerSize('rpc-layer-1')) > 0);
    const stats = await box.stats();
    assert.ok(stats.memoryLimitBytes >= 256 * MiB && stats.pids >= 1);
    assert.ok((await box.listeningPorts()) instanceof Set);
    await remote.deleteLayer('rpc-layer-1');
    assert.equal(await remote.layerExists('rpc-layer-1'), false);
  });

  it('a detached process reports its exit and log', async () => {
    const d = box.startDetached({ argv: ['sh', '-c', 'echo from-service; exit 4'] });
    assert.equal((await d.exited).exitCode, 4);
    assert.match(await d.logTail(1024), /from-service/);
  });

  it('calls in flight together each get their own answer, a slow one holding up none, a failed one failing alone', async () => {
    const slow = box.startDetached({ argv: ['sleep', '1'] });
    let slowDone = false;
    void slow.exited.then(() => (slowDone = true));
    const calls = Array.from({ length: 60 }, (_, i) =>
      i % 3 === 0
        ? remote.listSandboxes().then((ids) => assert.ok(ids.includes(BOX)))
        : i % 3 === 1
          ? remote.layerExists(`no-layer-${i}`).then((found) => assert.equal(found, false))
          : assert.rejects(remote.linkServices(`no-box-${i}`, 1, '/nowhere'), (err: Error) => err instanceof SandboxError && err.code === 'not_found'),
    );
    await Promise.all(calls);
    assert.equal(slowDone, false);
    assert.equal((await slow.exited).exitCode, 0);
  });

  it('an agent from before the call stream is called the unary way', async () => {
    // Such an agent serves the Node service without `Calls`: gRPC answers that call UNIMPLEMENTED.
    const old = new grpc.Server();
    const service = nodeService();
    const { Calls: _, ...rest } = service;
    old.addService(rest, {
      Hello: (_call: unknown, done: grpc.sendUnaryData<object>) => done(null, { protocol: PROTOCOL, node: 'old', base_image_name: 'img', instance: 'x' }),
      ListSandboxes: (_call: unknown, done: grpc.sendUnaryData<object>) => done(null, { ids: ['from-the-old-agent'] }),
    });
    const oldSocket = join(dataDir, 'old.sock');
    await new Promise<void>((resolve, reject) =>
      old.bindAsync(`unix://${oldSocket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    try {
      const client = await RemoteRuntime.connect({ address: `unix:${oldSocket}`, token: TOKEN });
      assert.equal(client.node, 'old');
      assert.deepEqual(await Promise.all([client.listSandboxes(), client.listSandboxes()]), [['from-the-old-agent'], ['from-the-old-agent']]);
      await client.close();
    } finally {
      old.forceShutdown();
    }
  });

  it('an agent that restarts under live sandboxes is caught up with: calls adopt again, deaths still reach the caller', async () => {
    const died = box.died;
    agent.forceClose();
    await local.close?.();
    // The old server unlinks its socket as it closes (libuv, by path, a moment later): the new one binds once
    // that is done, or its fresh socket would be unlinked.
    while (existsSync(socket)) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    await startAgent();
    // The new agent holds no handle of the box: the first call adopts it again and goes on.
    const p = box.spawn({ argv: ['true'] });
    p.stdin.end();
    await p.exited; // may be the lost-handle answer (125); the next one runs
    const stats = await box.stats();
    assert.ok(stats.pids >= 1);
    const q = box.spawn({ argv: ['echo', 'after restart'] });
    q.stdin.end();
    assert.equal((await output(q)).out, 'after restart\n');
    // The box's init dies: the caller's `died` (watched since before the restart) settles.
    const { pid } = JSON.parse(readFileSync(join(dataDir, 'boxes', BOX, 'state.json'), 'utf8')) as { pid: number };
    process.kill(pid, 'SIGKILL');
    await Promise.race([died, new Promise((_, reject) => setTimeout(() => reject(new Error('died never settled')), 20_000))]);
  });
});
