import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { until } from '../helpers/cluster.js';
import { DEVBOXD_BIN, ROOT, runInBox, sharedTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Node loss and drain with two servers (own data dirs, own node names) on one PostgreSQL database, with a
 * short lease (2 s) and grace (1 s): a server killed with SIGKILL is declared lost by the other, which fails
 * its boxes with a reason naming it while its own keep answering; restarted, it adopts nothing that failed
 * (its sandboxes go); `devboxd drain NODE` has the node's server suspend its boxes.
 */
const run = promisify(execFile);
const LEASE = { DEVBOXD_NODE_LEASE_SECONDS: '2', DEVBOXD_NODE_GRACE_SECONDS: '1', DEVBOXD_EVICT_GRACE_SECONDS: '0' };
let db: { url: string; release(): Promise<void> };
let a: TestServer;
let b: TestServer;

before(async () => {
  db = await sharedTestDatabase();
  // One after the other: the first start creates the default account both admin keys belong to.
  a = await startTestServer({ ...LEASE, DEVBOXD_DATABASE_URL: db.url, DEVBOXD_NODE_NAME: 'loss-a' });
  b = await startTestServer({ ...LEASE, DEVBOXD_DATABASE_URL: db.url, DEVBOXD_NODE_NAME: 'loss-b' });
});
after(async () => {
  await a?.stop();
  await b?.stop();
  await db?.release();
});

const cliEnv = () => ({ ...process.env, DEVBOXD_DATABASE_URL: db.url, DEVBOXD_DATA_DIR: '/nonexistent-devboxd-cli', DEVBOXD_LOG_LEVEL: 'silent' });

interface Listed {
  name: string;
  state: string;
  lease: string;
  devboxes: number;
}
function nodes(): Record<string, Listed> {
  const out = execFileSync(process.execPath, [DEVBOXD_BIN, 'nodes', '--json'], { cwd: ROOT, env: cliEnv() }).toString();
  return Object.fromEntries((JSON.parse(out).nodes as Listed[]).map((n) => [n.name, n]));
}

/** Whether a process whose command line has `marker` runs on this host (a box's processes are host processes). */
const running = (marker: string) => {
  try {
    return execFileSync('pgrep', ['-f', marker]).toString().trim().length > 0;
  } catch {
    return false;
  }
};

test('a killed node is declared lost: its boxes fail naming it, the other keeps serving; restarted, it adopts nothing that failed', async () => {
  const [onA, onB] = await Promise.all([
    a.client().devboxes.createAndAwaitRunning({ name: 'on-a' }),
    b.client().devboxes.createAndAwaitRunning({ name: 'on-b' }),
  ]);
  // A command left running on node a, with an argument no other process has: its process outlives the server.
  const marker = `sleep 3600.${process.pid}${Date.now() % 1000}`;
  const cmd = await a.client().devboxes.executeAsync(onA.id, { command: marker });
  await until('the command runs', async () => running(marker));
  const listed = nodes();
  assert.deepEqual([listed['loss-a']?.state, listed['loss-a']?.lease, listed['loss-a']?.devboxes], ['active', 'live', 1]);
  assert.deepEqual([listed['loss-b']?.state, listed['loss-b']?.devboxes], ['active', 1]);

  await a.restart({
    whileDown: async () => {
      const killed = Date.now();
      const failed = await until('node b fails the box of node a', async () => {
        const d = await b.client().devboxes.retrieve(onA.id);
        return d.status === 'failure' && d;
      });
      // Lease 2 s, grace 1 s, renewals every 2/3 s: well within 10 s of the kill.
      assert.ok(Date.now() - killed < 10_000, `declared lost after ${Date.now() - killed} ms`);
      assert.equal(failed.failure_reason, 'health_check_failed');
      assert.match(failed.state_transitions.at(-1)?.failure_reason ?? '', /^node loss-a stopped answering \(no heartbeat since \d{4}-\d\d-\d\dT/);
      const exe = await b.client().devboxes.executions.retrieve(onA.id, cmd.execution_id);
      assert.equal(exe.status, 'completed', 'its command ended with it');
      // The other node's box answers meanwhile.
      assert.equal((await runInBox(b.client(), onB.id, 'echo still-here')).out.trim(), 'still-here');
      const down = nodes();
      assert.deepEqual([down['loss-a']?.state, down['loss-a']?.devboxes], ['lost', 0]);
      assert.deepEqual([down['loss-b']?.state, down['loss-b']?.lease, down['loss-b']?.devboxes], ['active', 'live', 1]);
      assert.ok(running(marker), "the lost node's sandbox still runs on its host while its server is down");
    },
  });

  // Back under the same name: active again; the failed box stays failed and its sandbox goes.
  assert.equal((await a.client().devboxes.retrieve(onA.id)).status, 'failure');
  await until("the restarted node removes the failed box's sandbox", async () => !running(marker));
  const back = nodes();
  assert.deepEqual([back['loss-a']?.state, back['loss-a']?.lease, back['loss-a']?.devboxes], ['active', 'live', 0]);
  const fresh = await a.client().devboxes.createAndAwaitRunning({ name: 'on-a-again' });
  assert.equal((await runInBox(a.client(), fresh.id, 'echo fresh')).out.trim(), 'fresh');
  assert.equal((await runInBox(b.client(), onB.id, 'echo untouched')).out.trim(), 'untouched');
  await a.client().devboxes.shutdown(fresh.id);
});

test("devboxd drain NODE: that node's server suspends its boxes and refuses creates until undrain", async () => {
  const [onA, onB] = await Promise.all([
    a.client().devboxes.createAndAwaitRunning({ name: 'stay-a' }),
    b.client().devboxes.createAndAwaitRunning({ name: 'drain-b' }),
  ]);
  const { stdout } = await run(process.execPath, [DEVBOXD_BIN, 'drain', 'loss-b', '--wait-seconds', '120'], { cwd: ROOT, env: cliEnv() });
  assert.match(stdout, /node loss-b is draining/);
  assert.match(stdout, /drained: node loss-b holds no running devbox/);
  assert.equal((await b.client().devboxes.retrieve(onB.id)).status, 'suspended');
  assert.equal((await a.client().devboxes.retrieve(onA.id)).status, 'running', 'the other node is not drained');
  assert.equal(nodes()['loss-b']?.state, 'draining');
  const refused = await b
    .client({ maxRetries: 0 })
    .devboxes.create({})
    .then(
      () => 200,
      (err: { status?: number }) => err.status,
    );
  assert.equal(refused, 503);

  execFileSync(process.execPath, [DEVBOXD_BIN, 'undrain', 'loss-b'], { cwd: ROOT, env: cliEnv() });
  // The server sees it at its next renewal (every 2/3 s here): the box resumes there.
  await until('node b takes the resume', () =>
    b
      .client({ maxRetries: 0 })
      .devboxes.resume(onB.id)
      .then(
        () => true,
        (err: { status?: number }) => (err.status === 503 ? false : Promise.reject(err)),
      ),
  );
  await b.client().devboxes.awaitRunning(onB.id);
  assert.equal((await runInBox(b.client(), onB.id, 'echo resumed')).out.trim(), 'resumed');
  await Promise.all([a.client().devboxes.shutdown(onA.id), b.client().devboxes.shutdown(onB.id)]);
});
