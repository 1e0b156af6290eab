import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import pg from 'pg';
import { WebSocket } from 'ws';
import { startTestS3, type TestS3 } from '../helpers/s3.js';
import { DEVBOXD_BIN, ROOT, sharedTestDatabase, type TestServer } from '../helpers/server.js';
import { ssh, writeKey } from '../helpers/ssh-client.js';
import { startClusterServer, until } from '../helpers/cluster.js';

/**
 * Routing and placement between API servers (issue 26, item 2): two `devboxd serve` (each its node agent and
 * API server; own node names, data dirs and box subnets) on one PostgreSQL database and one S3 bucket, with
 * one cluster token. Through the official SDK against either server: creates land on both nodes, and every
 * call for a box (executions and their SSE, files, snapshots, suspend and resume, shutdown) works whichever
 * server takes it; a PTY WebSocket and SSH over TLS reach a box of the other node; a resume the registry
 * places on another node boots the box there from the blob store (or, with its disk in neither place, fails
 * cleanly); a box of a SIGKILLed node answers 503 naming it while
 * the other node's boxes keep answering. Traffic goes only to 127.0.0.1.
 */
// Renewals every second (drain and undrain are seen at once); a silent node is declared lost only after 33 s.
const LEASE = { DEVBOXD_NODE_LEASE_SECONDS: '3', DEVBOXD_NODE_GRACE_SECONDS: '30', DEVBOXD_EVICT_GRACE_SECONDS: '0' };
const AUTH = 'X-Runloop-Tunnel-Authorization';
type ApiError = { status?: number; message: string };

let db: { url: string; release(): Promise<void> };
let s3: TestS3;
let sql: pg.Client;
let a: TestServer;
let b: TestServer;
const keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-route-keys-'));

before(async () => {
  [db, s3] = await Promise.all([sharedTestDatabase(), startTestS3()]);
  sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  // One after the other: the first start creates the default account both admin keys belong to.
  a = await startClusterServer('route-a', '10.91.0.0/16', db.url, { ...LEASE, ...s3.env('cluster') });
  b = await startClusterServer('route-b', '10.92.0.0/16', db.url, { ...LEASE, ...s3.env('cluster') });
});
after(async () => {
  const stopped = await Promise.allSettled([a?.stop(), b?.stop()]);
  await sql?.end();
  await s3?.stop();
  await db?.release();
  fs.rmSync(keyDir, { recursive: true, force: true });
  for (const r of stopped) if (r.status === 'rejected') throw r.reason;
});

const nodeOf = async (id: string) => (await sql.query<{ node: string }>('SELECT node FROM devboxes WHERE id = $1', [id])).rows[0]?.node;
const port = (s: TestServer) => Number(new URL(s.url).port);
const cli = (...args: string[]) =>
  execFileSync(process.execPath, [DEVBOXD_BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, DEVBOXD_DATABASE_URL: db.url, DEVBOXD_DATA_DIR: '/nonexistent-devboxd-cli', DEVBOXD_LOG_LEVEL: 'silent' },
  }).toString();
const status = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: ApiError) => e.status,
  );

/** A running box on each node: created through `api` until placement has put one on both. */
async function oneOnEach(api: Runloop, name: string): Promise<Record<'route-a' | 'route-b', string>> {
  const on: Record<string, string> = {};
  const extra: string[] = [];
  for (let i = 0; i < 8 && !(on['route-a'] && on['route-b']); i++) {
    const d = await api.devboxes.createAndAwaitRunning({ name });
    const node = (await nodeOf(d.id))!;
    if (on[node]) extra.push(d.id);
    else on[node] = d.id;
  }
  await Promise.all(extra.map((id) => api.devboxes.shutdown(id)));
  assert.ok(on['route-a'] && on['route-b'], 'placement puts boxes on both nodes');
  return on as Record<'route-a' | 'route-b', string>;
}

/** Everything a box does, asked of `api` (either server): executions with their SSE, files, snapshots, suspend and resume. */
async function exercise(api: Runloop, id: string, tag: string): Promise<void> {
  assert.equal((await api.devboxes.executeSync(id, { command: `echo sync-${tag}` })).stdout, `sync-${tag}\n`);
  const started = await api.devboxes.executeAsync(id, { command: `for i in 1 2 3; do echo ${tag}-$i; sleep 0.2; done` });
  let streamed = '';
  for await (const c of await api.devboxes.executions.streamStdoutUpdates(id, started.execution_id, { offset: '0' })) streamed += c.output;
  assert.equal(streamed, `${tag}-1\n${tag}-2\n${tag}-3\n`, 'the SSE stream, forwarded as it comes');
  assert.equal((await api.devboxes.executions.awaitCompleted(id, started.execution_id)).exit_status, 0);

  await api.devboxes.writeFileContents(id, { file_path: 'note.txt', contents: `note ${tag}` });
  assert.equal(await api.devboxes.readFileContents(id, { file_path: 'note.txt' }), `note ${tag}`);
  const payload = Buffer.alloc(1 << 20, tag);
  await api.devboxes.uploadFile(id, { path: 'up.bin', file: new File([payload], 'up.bin') });
  const down = Buffer.from(await (await api.devboxes.downloadFile(id, { path: 'up.bin' })).arrayBuffer());
  assert.ok(down.equals(payload), 'a 1 MiB upload and download through the multipart and stream paths');

  const snap = await api.devboxes.snapshotDisk(id, { name: `snap-${tag}` });
  assert.equal((await api.devboxes.diskSnapshots.queryStatus(snap.id)).status, 'complete');

  await api.devboxes.suspend(id);
  assert.equal((await api.devboxes.awaitSuspended(id)).status, 'suspended');
  await api.devboxes.resume(id);
  assert.equal((await api.devboxes.awaitRunning(id)).status, 'running');
  assert.equal(await api.devboxes.readFileContents(id, { file_path: 'note.txt' }), `note ${tag}`, 'resumed on its disk');
}

test('creates land on both nodes, and every call for a box works through either server', async () => {
  const [ca, cb] = [a.client(), b.client()];
  // Placement: the least loaded node (ties to fewer boxes, then the name), whichever server takes the create.
  const first = await ca.devboxes.createAndAwaitRunning({ name: 'first' });
  const second = await ca.devboxes.createAndAwaitRunning({ name: 'second' });
  const third = await cb.devboxes.create({ name: 'third' });
  const placed = await Promise.all([first, second, third].map((d) => nodeOf(d.id)));
  assert.deepEqual(placed, ['route-a', 'route-b', 'route-a'], 'the second create forwarded to b, the third (through b) to a');

  // x-request-id holds across the hop: the same id replays the first answer, through either server.
  const once = { idempotencyKey: `route-once-${Date.now()}` };
  const made = await ca.devboxes.create({ name: 'once' }, once);
  const [again, elsewhere] = await Promise.all([ca.devboxes.create({ name: 'once' }, once), cb.devboxes.create({ name: 'once' }, once)]);
  assert.deepEqual([again.id, elsewhere.id], [made.id, made.id]);
  assert.equal(await nodeOf(made.id), 'route-b');
  assert.equal((await ca.devboxes.list({ limit: 100 })).devboxes.filter((d) => d.name === 'once').length, 1);

  // A box of each node through the server of the other (forwarded), and through its own.
  await Promise.all([exercise(cb, first.id, 'first'), exercise(ca, second.id, 'second')]);
  assert.deepEqual(await Promise.all([first, second].map((d) => nodeOf(d.id))), ['route-a', 'route-b'], 'resumed on their own nodes');
  assert.equal((await ca.devboxes.executeSync(first.id, { command: 'cat note.txt' })).stdout, 'note first');
  assert.equal((await cb.devboxes.executeSync(second.id, { command: 'cat note.txt' })).stdout, 'note second');
  // Logs of a box of the other node: its executions' starts and exits.
  assert.ok((await ca.devboxes.logs.list(second.id)).logs.length > 0);

  const ended = await Promise.all([
    cb.devboxes.shutdown(first.id),
    ca.devboxes.shutdown(second.id),
    ca.devboxes.shutdown(third.id),
    cb.devboxes.shutdown(made.id),
  ]);
  assert.deepEqual(
    ended.map((d) => d.status),
    ['shutdown', 'shutdown', 'shutdown', 'shutdown'],
  );
  assert.equal((await cb.devboxes.retrieve(first.id)).status, 'shutdown');
});

test('a PTY WebSocket and SSH over TLS reach a box of the other node', async () => {
  const { 'route-a': onA, 'route-b': onB } = await oneOnEach(a.client(), 'pty');
  await a.client().devboxes.shutdown(onA);
  const t = await a.client().devboxes.createPtyTunnel(onB);
  const res = await fetch(`${a.url}/tunnel/${t.tunnel_key}/8080/pty/main`, { headers: { [AUTH]: `Bearer ${t.auth_token}` } });
  assert.equal(res.status, 200);
  const { connect_url } = (await res.json()) as { connect_url: string };
  const ws = new WebSocket(`ws://127.0.0.1:${port(a)}${connect_url}`, { headers: { [AUTH]: `Bearer ${t.auth_token}` } });
  let shown = '';
  ws.on('message', (d: Buffer) => (shown += d.toString()));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  ws.send(Buffer.from('echo "routed-$((6*7))-$(hostname)"\n'));
  await until('the shell answers through the hop', async () => shown.includes('routed-42-'));
  ws.close();

  const k = await a.client().devboxes.createSSHKey(onB);
  const key = writeKey(keyDir, 'b', k.ssh_private_key);
  const r = await ssh({ key, target: `${k.ssh_user}@${k.url}`, args: ['echo "ssh-$((6*7))"'], port: port(a) });
  assert.equal(r.stdout, 'ssh-42\n', r.stderr);
  await b.client().devboxes.shutdown(onB);
});

test("a resume placed on another node boots the box there from the blob store's copy of its disk; a disk in neither place keeps it suspended", async () => {
  const api = a.client();
  const [moves, stays] = await Promise.all(['moves', 'stays'].map((name) => api.devboxes.createAndAwaitRunning({ name })));
  await api.devboxes.writeFileContents(moves.id, { file_path: 'moved.txt', contents: 'written before the move' });
  for (const id of [moves.id, stays.id]) await api.devboxes.suspend(id);
  await Promise.all([moves.id, stays.id].map((id) => api.devboxes.awaitSuspended(id)));
  const other = (node: string | undefined) => (node === 'route-a' ? 'route-b' : 'route-a');
  // With its own node draining, a resume goes to the other node.
  const drained = async (node: string, fn: () => Promise<void>) => {
    cli('drain', node, '--wait-seconds', '0');
    try {
      await fn();
    } finally {
      cli('undrain', node);
    }
  };

  const from = (await nodeOf(moves.id))!;
  await drained(from, async () => {
    await api.devboxes.resume(moves.id);
    assert.equal((await b.client().devboxes.awaitRunning(moves.id)).status, 'running');
    assert.equal(await nodeOf(moves.id), other(from), 'resumed on the node that was not draining');
    assert.equal(await api.devboxes.readFileContents(moves.id, { file_path: 'moved.txt' }), 'written before the move');
  });

  // This box's disk is in no blob store (as with DEVBOXD_LAYER_BLOBS=off): only its own node can resume it.
  const home = (await nodeOf(stays.id))!;
  const { layers } = (await sql.query<{ layers: string }>('SELECT layers FROM devboxes WHERE id = $1', [stays.id])).rows[0]!;
  await sql.query('DELETE FROM layer_blobs WHERE layer_id = ANY($1)', [JSON.parse(layers)]);
  await drained(home, async () => {
    const refused = await a
      .client({ maxRetries: 0 })
      .devboxes.resume(stays.id)
      .then(
        () => assert.fail('resumed without its disk'),
        (e: ApiError) => e,
      );
    assert.equal(refused.status, 503);
    assert.match(refused.message, new RegExp(`its disk \\(layer \\S+\\) is on node ${home}, neither here nor in the blob store`));
    assert.equal((await b.client().devboxes.retrieve(stays.id)).status, 'suspended');
    assert.equal(await nodeOf(stays.id), home);
  });
  await until('the resume is taken on its own node again', async () => (await status(a.client({ maxRetries: 0 }).devboxes.resume(stays.id))) === 200);
  assert.equal((await api.devboxes.awaitRunning(stays.id)).status, 'running');
  assert.equal(await nodeOf(stays.id), home);
  await Promise.all([moves.id, stays.id].map((id) => api.devboxes.shutdown(id)));
});

test('a box of a SIGKILLed node answers 503 naming it; the other node keeps answering; back, it serves its boxes again', async () => {
  const { 'route-a': onA, 'route-b': onB } = await oneOnEach(a.client(), 'live');
  await b.restart({
    whileDown: async () => {
      const api = a.client({ maxRetries: 0 });
      const err = await api.devboxes.executeSync(onB, { command: 'true' }).then(
        () => assert.fail('answered by a dead node'),
        (e: ApiError) => e,
      );
      assert.equal(err.status, 503);
      assert.match(err.message, /node route-b/);
      assert.equal((await api.devboxes.executeSync(onA, { command: 'echo still-here' })).stdout, 'still-here\n');
      // The record itself is the database's: a GET is answered here while the node is out of reach.
      assert.equal((await api.devboxes.retrieve(onB)).status, 'running');
    },
  });
  assert.equal((await a.client().devboxes.executeSync(onB, { command: 'echo back' })).stdout, 'back\n');
  await Promise.all([a.client().devboxes.shutdown(onA), b.client().devboxes.shutdown(onB)]);
});
