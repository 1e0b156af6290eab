import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, startTestServer, type TestServer, DEVBOXD_BIN } from '../helpers/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => server?.stop());

/** Runs `devboxd serve` on the test server's data dir; resolves with its exit code and output. */
function secondServer(): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [DEVBOXD_BIN, 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DEVBOXD_DATA_DIR: server.dataDir, DEVBOXD_PORT: '0', DEVBOXD_IMAGE_DIR: path.join(ROOT, 'data/images') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => child.once('exit', (code) => (clearTimeout(timer), resolve({ code, out }))));
}

test('a second server on the same data dir exits with a message and touches nothing', async () => {
  const api = server.client();
  const box = await server.sdk().devbox.create({ name: 'lock-box' });
  const lockFile = path.join(server.dataDir, 'devboxd.lock');
  assert.equal(fs.readFileSync(lockFile, 'utf8').trim(), String(server.agentPid()));

  const second = await secondServer();
  assert.equal(second.code, 1);
  assert.match(second.out, new RegExp(`another devboxd \\(pid ${server.agentPid()}\\) is already serving the data dir ${server.dataDir}`));
  assert.doesNotMatch(second.out, /listening/);
  assert.equal(fs.readFileSync(lockFile, 'utf8').trim(), String(server.agentPid()), 'the lock still names the first server');

  // The first server keeps serving, and its devbox is untouched (no second reconcile ran).
  assert.equal((await api.devboxes.retrieve(box.id)).status, 'running');
  assert.equal((await api.devboxes.execute(box.id, { command: 'echo still-here' })).stdout, 'still-here\n');
  await box.shutdown();
});

test('a server killed with SIGKILL leaves no stale lock: the next start takes it at once', async () => {
  const before = server.pid();
  await server.restart();
  assert.notEqual(server.pid(), before);
  assert.equal(fs.readFileSync(path.join(server.dataDir, 'devboxd.lock'), 'utf8').trim(), String(server.agentPid()));
  assert.equal((await server.client().accounts.me()).name, 'default');
  assert.equal((await secondServer()).code, 1, 'and holds it against the next one');
});
