import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ADMIN_KEY, DEVBOXD_BIN, ROOT, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The client CLI (`devboxd devbox ...`) against a running server, as a user runs it: RUNLOOP_BASE_URL and
 * RUNLOOP_API_KEY, a process per command, its stdout, stderr and exit status.
 */
let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s?.stop());

function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const r = spawnSync(process.execPath, [DEVBOXD_BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, RUNLOOP_BASE_URL: s.url, RUNLOOP_API_KEY: ADMIN_KEY, DEVBOXD_LOG_LEVEL: 'silent', ...env },
  });
  return { code: r.status, out: r.stdout.toString(), err: r.stderr.toString() };
}

test('devbox create, list, get, exec, logs, suspend, resume and shutdown through the API', async () => {
  const made = cli(['devbox', 'create', '--name', 'from-cli', '--json']);
  assert.equal(made.code, 0, made.err);
  const box = JSON.parse(made.out) as { id: string; status: string; name: string };
  assert.deepEqual([box.status, box.name], ['running', 'from-cli']);

  const listed = cli(['devbox', 'list', '--json']);
  assert.ok((JSON.parse(listed.out).devboxes as { id: string }[]).some((d) => d.id === box.id));
  const table = cli(['devbox', 'list', '--status', 'running']);
  assert.match(table.out, new RegExp(`^ID\\tNAME\\tSTATUS\\tCREATED\\n(.*\\n)*${box.id}\\tfrom-cli\\trunning\\t`));

  const hi = cli(['devbox', 'exec', box.id, '--', 'echo', 'hi']);
  assert.deepEqual([hi.code, hi.out], [0, 'hi\n']);
  const failing = cli(['devbox', 'exec', box.id, '--', 'echo out; echo err >&2; exit 3']);
  assert.deepEqual([failing.code, failing.out, failing.err], [3, 'out\n', 'err\n']);

  assert.match(cli(['devbox', 'logs', box.id]).out, /echo hi/);
  assert.equal(JSON.parse(cli(['devbox', 'get', box.id, '--json']).out).status, 'running');
  assert.match(cli(['devbox', 'suspend', box.id]).out, new RegExp(`${box.id}\\tfrom-cli\\t(suspending|suspended)`));
  const resumed = cli(['devbox', 'resume', box.id]);
  assert.equal(resumed.code, 0, resumed.err);
  assert.match(resumed.out, /\trunning\t/);
  assert.match(cli(['devbox', 'shutdown', box.id]).out, /\tshutdown\t/);
});

test('without a key it says which variable to set (exit 2); a box of no one is the API 404, exit 1', () => {
  const none = cli(['devbox', 'list'], { RUNLOOP_API_KEY: undefined });
  assert.equal(none.code, 2);
  assert.match(none.err, /no API key: set RUNLOOP_API_KEY/);
  const missing = cli(['devbox', 'get', 'dbx_nope']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /404/);
  assert.equal(cli(['devbox', 'list', '--status', 'sleeping']).code, 2);
});

test('snapshot create, list and delete; object upload and download byte for byte, with progress on stderr', async () => {
  const box = JSON.parse(cli(['devbox', 'create', '--json']).out) as { id: string };
  const snap = cli(['snapshot', 'create', box.id, '--name', 'cli-snap', '--json']);
  assert.equal(snap.code, 0, snap.err);
  const { id } = JSON.parse(snap.out) as { id: string };
  assert.match(cli(['snapshot', 'list', '--devbox', box.id]).out, new RegExp(`${id}\\tcli-snap\\t${box.id}\\t`));
  assert.equal(cli(['snapshot', 'delete', id]).code, 0);
  assert.ok(!cli(['snapshot', 'list']).out.includes(id));
  cli(['devbox', 'shutdown', box.id]);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-cli-obj-'));
  try {
    const bytes = crypto.randomBytes(3 * 1024 * 1024 + 17);
    fs.writeFileSync(path.join(dir, 'in.bin'), bytes);
    const up = cli(['object', 'upload', path.join(dir, 'in.bin'), '--json']);
    assert.equal(up.code, 0, up.err);
    assert.match(up.err, /uploaded 3\.0\/3\.0 MiB 100%\n$/);
    const obj = JSON.parse(up.out) as { id: string; name: string; state: string };
    assert.deepEqual([obj.name, obj.state], ['in.bin', 'READ_ONLY']);
    const down = cli(['object', 'download', obj.id, path.join(dir, 'out.bin')]);
    assert.equal(down.code, 0, down.err);
    assert.match(down.err, /downloaded 3\.0\/3\.0 MiB 100%\n$/);
    assert.ok(fs.readFileSync(path.join(dir, 'out.bin')).equals(bytes));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('blueprint build --follow prints the log as it comes and exits 0 when built, 1 when the build fails', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-cli-bp-'));
  try {
    fs.writeFileSync(path.join(dir, 'ok'), 'FROM runloop:runloop/starter-x86_64\nRUN echo building-now\n');
    fs.writeFileSync(path.join(dir, 'bad'), 'FROM runloop:runloop/starter-x86_64\nRUN exit 7\n');
    const ok = cli(['blueprint', 'build', 'cli-bp', '--dockerfile', path.join(dir, 'ok'), '--follow']);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /building-now/);
    assert.match(ok.out, /\tcli-bp\tbuild_complete\n$/);
    assert.match(ok.err, /build_complete \d+ s\n$/);
    const bad = cli(['blueprint', 'build', 'cli-bad', '--dockerfile', path.join(dir, 'bad'), '--follow']);
    assert.equal(bad.code, 1);
    assert.match(bad.out, /\tcli-bad\tfailed\n$/);
    assert.match(cli(['blueprint', 'list']).out, /\tcli-bp\tbuild_complete\t/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('benchmark run --follow prints each scenario run as its state changes, and the run last; exit 0 once completed', async () => {
  const api = s.client();
  const scenario = await api.scenarios.create({
    name: 'cli-scenario',
    input_context: { problem_statement: 'nothing to do' },
    scoring_contract: { scoring_function_parameters: [{ name: 'ok', weight: 1, scorer: { type: 'command_scorer', command: 'true' } }] },
  });
  const benchmark = await api.benchmarks.create({ name: 'cli-bench', scenario_ids: [scenario.id] });
  assert.match(cli(['benchmark', 'list']).out, new RegExp(`${benchmark.id}\\tcli-bench\\t1\\n`));
  const child = spawn(process.execPath, [DEVBOXD_BIN, 'benchmark', 'run', benchmark.id, '--follow'], {
    cwd: ROOT,
    env: { ...process.env, RUNLOOP_BASE_URL: s.url, RUNLOOP_API_KEY: ADMIN_KEY, DEVBOXD_LOG_LEVEL: 'silent' },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  // The "agent": once the scenario run shows running, it completes it (scored in its box).
  for (;;) {
    const m = /^(\S+)\t\S+\t\S+\trunning\t/m.exec(out);
    if (m) {
      await api.devboxes.awaitRunning(/^\S+\t\S+\t(\S+)\t/m.exec(out)![1]!);
      await api.scenarios.runs.complete(m[1]!);
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(await exited, 0, out);
  assert.match(out, new RegExp(`\\t${scenario.id}\\t\\S+\\tcompleted\\t1\\n`));
  assert.match(out, /RUN\tSTATE\tSCORE\n\S+\tcompleted\t1\n$/);
});

test('devbox ssh runs a command in the box through the stock ssh and openssl, and exits with its status', () => {
  const box = JSON.parse(cli(['devbox', 'create', '--json']).out) as { id: string };
  const r = cli(['devbox', 'ssh', box.id, '--', 'echo hi from $(hostname); exit 4']);
  assert.equal(r.code, 4, r.err);
  assert.equal(r.out, `hi from ${box.id.replaceAll('_', '-')}\n`);
  cli(['devbox', 'shutdown', box.id]);
});
