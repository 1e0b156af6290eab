import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: Runloop;
before(async () => {
  server = await startTestServer();
  api = server.client();
});
after(async () => server?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads a whole SDK output stream: chunks with their arrival times. */
async function collect(stream: AsyncIterable<{ output: string; offset?: number }>) {
  const chunks: { output: string; offset?: number; at: number }[] = [];
  for await (const c of stream) chunks.push({ ...c, at: Date.now() });
  return chunks;
}

/** SSE over plain HTTP/1.1 fetch: the parsed data events, until the server ends the response. */
async function sseEvents(path: string, opts: { onEvent?: (e: unknown) => void; signal?: AbortSignal } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}`, accept: 'text/event-stream' },
    signal: opts.signal,
  });
  const events: unknown[] = [];
  if (res.status !== 200) return { status: res.status, body: await res.text(), events };
  const decoder = new TextDecoder();
  let buf = '';
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      if (!data) continue;
      const e = JSON.parse(data);
      events.push(e);
      opts.onEvent?.(e);
    }
  }
  return { status: res.status, body: '', events };
}

describe('executions', () => {
  let box: Devbox;
  before(async () => {
    box = await server.sdk().devbox.create({ name: 'exec-box' });
  });
  after(async () => box?.shutdown());

  test('execute returns the output, exit code and stderr of a finished command', async () => {
    const r = await api.devboxes.execute(box.id, { command: 'echo hi' });
    assert.equal(r.status, 'completed');
    assert.equal(r.exit_status, 0);
    assert.equal(r.stdout, 'hi\n');
    assert.equal(r.stderr, '');
    assert.equal(r.stdout_truncated, false);

    const bad = await api.devboxes.execute(box.id, { command: 'echo out; echo oops >&2; exit 3' });
    assert.equal(bad.exit_status, 3);
    assert.equal(bad.stdout, 'out\n');
    assert.equal(bad.stderr, 'oops\n');

    const sync = await api.devboxes.executeSync(box.id, { command: 'printf "%s" "$HOME"' });
    assert.deepEqual([sync.exit_status, sync.stdout], [0, '/home/user']);

    const viaSdk = await box.cmd.exec('kill -9 $$');
    assert.equal(viaSdk.exitCode, 137);

    await assert.rejects(api.devboxes.executeAsync(box.id, { command: `echo ${'x'.repeat(200_000)}` }), { status: 400 });
  });

  test('a repeated command_id returns the same execution and never runs it again', async () => {
    const body = { command: 'echo run >> ~/runs.txt; sleep 0.3; cat ~/runs.txt | wc -l', command_id: 'cmd-once-1' };
    const first = await api.devboxes.execute(box.id, { ...body, optimistic_timeout: 0 });
    const second = await api.devboxes.execute(box.id, body);
    assert.equal(second.execution_id, first.execution_id);
    assert.equal(second.status, 'completed');
    assert.equal(second.stdout, '1\n');
    const third = await api.devboxes.execute(box.id, body);
    assert.equal(third.execution_id, first.execution_id);
    assert.equal((await box.cmd.exec('wc -l < ~/runs.txt')).exitCode, 0);
    assert.equal((await (await box.cmd.exec('wc -l < ~/runs.txt')).stdout()).trim(), '1');
  });

  test('execute_async, wait_for_status and retrieve with last_n', async () => {
    const started = await api.devboxes.executeAsync(box.id, { command: 'sleep 0.5; seq 1 10' });
    assert.ok(['queued', 'running'].includes(started.status));
    assert.equal(started.stdout, undefined);
    const running = await api.devboxes.waitForCommand(box.id, started.execution_id, { statuses: ['running', 'completed'] });
    assert.ok(['running', 'completed'].includes(running.status));
    const done = await api.devboxes.waitForCommand(box.id, started.execution_id, { statuses: ['completed'], last_n: '3' });
    assert.equal(done.status, 'completed');
    assert.equal(done.stdout, '8\n9\n10\n');
    assert.equal(done.stdout_truncated, true);
    const got = await api.devboxes.executions.retrieve(box.id, started.execution_id, { last_n: '20' });
    assert.equal(got.stdout, Array.from({ length: 10 }, (_, i) => `${i + 1}\n`).join(''));
    assert.equal(got.stdout_truncated, false);

    // The hold ends with 408 + x-should-retry (the SDK's long-poll loop re-sends).
    const slow = await api.devboxes.executeAsync(box.id, { command: 'sleep 5' });
    const res = await fetch(`${server.url}/v1/devboxes/${box.id}/executions/${slow.execution_id}/wait_for_status`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ statuses: ['completed'], timeout_seconds: 0.3 }),
    });
    assert.equal(res.status, 408);
    assert.equal(res.headers.get('x-should-retry'), 'true');
    assert.match(((await res.json()) as { message: string }).message, /did not reach completed/);
    await api.devboxes.executions.kill(box.id, slow.execution_id);

    await assert.rejects(api.devboxes.executions.retrieve(box.id, 'exe_nope'), { status: 404 });
    const missing = await sseEvents(`/v1/devboxes/${box.id}/executions/exe_nope/stream_stdout_updates?offset=0`);
    assert.equal(missing.status, 404);
    assert.match(missing.body, /"message"/);
  });

  test('send_std_in feeds interactive programs; EOF closes their input', async () => {
    const reader = await box.cmd.execAsync('read x; echo got $x', { attach_stdin: true });
    await api.devboxes.executions.sendStdIn(box.id, reader.executionId, { text: 'hello\n' });
    const r1 = await reader.result();
    assert.equal(await r1.stdout(), 'got hello\n');

    const cat = await api.devboxes.executeAsync(box.id, { command: 'cat; echo end', attach_stdin: true });
    const ack = await api.devboxes.executions.sendStdIn(box.id, cat.execution_id, { text: 'a\nb\n' });
    assert.deepEqual(ack, { devbox_id: box.id, execution_id: cat.execution_id, success: true });
    // `{signal}` alone would read as request options to the SDK (its `signal` key): send `text` along.
    await api.devboxes.executions.sendStdIn(box.id, cat.execution_id, { text: '', signal: 'EOF' });
    const r2 = await api.devboxes.executions.awaitCompleted(box.id, cat.execution_id);
    assert.equal(r2.stdout, 'a\nb\nend\n');

    const loop = await api.devboxes.executeAsync(box.id, {
      command: 'trap "echo interrupted; exit 7" INT; while true; do sleep 0.1; done',
      attach_stdin: true,
    });
    await api.devboxes.waitForCommand(box.id, loop.execution_id, { statuses: ['running'] });
    await sleep(200);
    await api.devboxes.executions.sendStdIn(box.id, loop.execution_id, { text: null, signal: 'INTERRUPT' });
    const r3 = await api.devboxes.executions.awaitCompleted(box.id, loop.execution_id);
    assert.equal(r3.exit_status, 7);
    assert.equal(r3.stdout, 'interrupted\n');
  });

  test('kill with kill_process_group ends the whole process tree', async () => {
    const e = await api.devboxes.executeAsync(box.id, { command: 'sleep 1000 & sleep 1000; wait' });
    await api.devboxes.waitForCommand(box.id, e.execution_id, { statuses: ['running'] });
    await sleep(300);
    const killed = await api.devboxes.executions.kill(box.id, e.execution_id, { kill_process_group: true });
    assert.equal(killed.status, 'completed');
    assert.equal(killed.exit_status, 137);
    const left = await api.devboxes.execute(box.id, { command: 'ps -eo args | grep -c "^sleep 1000" || true' });
    assert.equal(left.stdout, '0\n');
  });

  test('a named shell keeps its working directory and exported variables, in order', async () => {
    const shell = box.shell('work');
    await shell.exec('mkdir -p /tmp/proj && cd /tmp/proj && export GREETING=hello && LOCAL_ONLY=1');
    const r = await shell.exec('pwd; echo $GREETING; echo "[$LOCAL_ONLY]"');
    assert.equal(await r.stdout(), '/tmp/proj\nhello\n[]\n');
    assert.equal(r.result.shell_name, 'work');
    const other = await box.cmd.exec('pwd; echo "[$GREETING]"');
    assert.equal(await other.stdout(), '/home/user\n[]\n');

    // Queued commands on one shell run strictly one after another.
    const a = await api.devboxes.executeAsync(box.id, { command: 'sleep 0.4; echo a >> order.txt', shell_name: 'work' });
    const b = await api.devboxes.executeAsync(box.id, { command: 'echo b >> order.txt; cat order.txt', shell_name: 'work' });
    assert.equal(b.status, 'queued');
    await api.devboxes.executions.awaitCompleted(box.id, a.execution_id);
    const rb = await api.devboxes.executions.awaitCompleted(box.id, b.execution_id);
    assert.equal(rb.stdout, 'a\nb\n');
  });

  test('output streams arrive while the command runs and resume from any offset', async () => {
    const e = await api.devboxes.executeAsync(box.id, { command: 'for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done' });
    const chunks = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, e.execution_id));
    const endedAt = Date.now();
    assert.equal(chunks.map((c) => c.output).join(''), 'line1\nline2\nline3\nline4\nline5\n');
    assert.ok(chunks.length >= 3, `expected several chunks, got ${chunks.length}`);
    assert.ok(endedAt - chunks[0]!.at > 800, 'the first line arrives long before the command ends');
    assert.equal(chunks.at(-1)!.offset, 30);

    // A bigger output, with multi-byte characters: resuming at any byte offset gives the rest exactly.
    const big = await api.devboxes.execute(box.id, { command: 'for i in $(seq 1 20000); do echo "$i é€😀"; done' });
    assert.equal(big.exit_status, 0);
    const expected = Buffer.from(Array.from({ length: 20000 }, (_, i) => `${i + 1} é€😀\n`).join(''));
    const full = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, big.execution_id, { offset: '0' }));
    assert.ok(full.length > 1);
    assert.equal(full.at(-1)!.offset, expected.length);
    assert.ok(
      full.every((c) => !c.output.includes('\uFFFD')),
      'chunks split on character boundaries',
    );
    assert.equal(full.map((c) => c.output).join(''), expected.toString());
    const mid = full[Math.floor(full.length / 2)]!.offset!;
    const rest = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, big.execution_id, { offset: String(mid) }));
    assert.equal(rest.map((c) => c.output).join(''), expected.subarray(mid).toString());
    const charStart = expected.indexOf('😀', 100_000);
    const fromChar = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, big.execution_id, { offset: String(charStart) }));
    assert.equal(fromChar.map((c) => c.output).join(''), expected.subarray(charStart).toString());
    const past = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, big.execution_id, { offset: String(expected.length) }));
    assert.equal(past.length, 0);

    const err = await api.devboxes.execute(box.id, { command: 'echo to-stderr >&2' });
    const errChunks = await collect(await api.devboxes.executions.streamStderrUpdates(box.id, err.execution_id));
    assert.equal(errChunks.map((c) => c.output).join(''), 'to-stderr\n');
  });

  test('100 MB of output goes to disk, not to memory', async () => {
    // Each of the two processes it passes through (the node agent, the API server): neither holds it.
    const rss = () => [server.pid(), server.agentPid()].map((pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024);
    const before = rss();
    const r = await api.devboxes.execute(box.id, { command: "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo done" }, { timeout: 120_000 });
    const done = r.status === 'completed' ? r : await api.devboxes.executions.awaitCompleted(box.id, r.execution_id);
    assert.equal(done.exit_status, 0);
    assert.equal(done.stdout_truncated, true);
    assert.ok(done.stdout!.endsWith('aaaa\ndone\n'));
    assert.ok(done.stdout!.length <= 1024 * 1024);
    const grew = rss().map((n, i) => n - before[i]!);
    console.log(`100 MB of output: the API server's RSS grew by ${grew[0]! >> 20} MiB, the node agent's by ${grew[1]! >> 20} MiB`);
    assert.ok(
      grew.every((n) => n < 64 * 1024 * 1024),
      `RSS grew by ${grew.join(' and ')} bytes`,
    );
    const tail = await collect(await api.devboxes.executions.streamStdoutUpdates(box.id, done.execution_id, { offset: String(100_000_000 - 4) }));
    assert.equal(tail.map((c) => c.output).join(''), 'aaaa\ndone\n');
    assert.equal(tail.at(-1)!.offset, 100_000_006);
  });

  test('cmd.exec with callbacks streams lines and returns once everything arrived', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const r = await box.cmd.exec('echo one; sleep 0.2; echo two >&2; echo three', { stdout: (l) => out.push(l), stderr: (l) => err.push(l) });
    assert.equal(r.exitCode, 0);
    assert.equal(out.join(''), 'one\nthree\n');
    assert.equal(err.join(''), 'two\n');
  });

  test('logs list starts and exits; logs/tail streams them live', async () => {
    const r = await api.devboxes.execute(box.id, { command: 'echo logged-line; exit 4' });
    const { logs } = await api.devboxes.logs.list(box.id, { execution_id: r.execution_id });
    assert.equal(logs[0]!.cmd, 'echo logged-line; exit 4');
    assert.equal(logs[0]!.cmd_id, r.execution_id);
    assert.equal(logs[0]!.source, 'exec');
    assert.ok(logs.some((l) => l.message === 'logged-line'));
    assert.equal(logs.at(-1)!.exit_code, 4);
    const shellLogs = await api.devboxes.logs.list(box.id, { shell_name: 'work' });
    assert.ok(shellLogs.logs.length > 0 && shellLogs.logs.every((l) => l.shell_name === 'work'));

    const ctl = new AbortController();
    const seen: { cmd?: string | null; exit_code?: number | null }[] = [];
    let resolveSeen!: () => void;
    const gotLive = new Promise<void>((r) => (resolveSeen = r));
    const tail = sseEvents(`/v1/devboxes/${box.id}/logs/tail`, {
      signal: ctl.signal,
      onEvent: (e) => {
        const entry = e as { cmd?: string | null; exit_code?: number | null };
        seen.push(entry);
        if (entry.cmd === 'echo tailed' && entry.exit_code === 0) resolveSeen();
      },
    }).catch(() => undefined);
    // The backlog arrives before anything live: wait for it (a loaded machine may take a while), then go live.
    for (let i = 0; i < 200 && !seen.some((l) => l.cmd === 'echo logged-line; exit 4'); i++) await sleep(50);
    assert.ok(
      seen.some((l) => l.cmd === 'echo logged-line; exit 4'),
      'the backlog comes first',
    );
    await api.devboxes.execute(box.id, { command: 'echo tailed' });
    await gotLive;
    ctl.abort();
    await tail;
  });
});

describe('launch commands and entrypoints run as executions', () => {
  test('a failing launch command fails the devbox with a readable reason', async () => {
    const d = await api.devboxes.create({ launch_parameters: { launch_commands: ['echo ok > ~/first', 'echo boom >&2; exit 3', 'echo never'] } });
    let view = d;
    for (let i = 0; i < 150 && !['failure', 'shutdown', 'running'].includes(view.status); i++) {
      await sleep(100);
      view = await api.devboxes.retrieve(d.id);
    }
    assert.equal(view.status, 'failure');
    assert.equal(view.failure_reason, 'execution_failed');
    assert.equal(view.state_transitions.at(-1)!.failure_reason, 'launch command "echo boom >&2; exit 3" exited with 3: boom');
    const { logs } = await api.devboxes.logs.list(d.id);
    assert.ok(logs.every((l) => l.source === 'setup_commands'));
    assert.deepEqual(
      logs.filter((l) => l.exit_code !== null && l.exit_code !== undefined).map((l) => l.exit_code),
      [0, 3],
    );
  });

  test('the entrypoint exiting shuts the devbox down; logs/tail ends with it', async () => {
    const d = await api.devboxes.create({ entrypoint: 'echo started; sleep 1; echo finished' });
    const tail = await sseEvents(`/v1/devboxes/${d.id}/logs/tail`);
    const view = await api.devboxes.retrieve(d.id);
    assert.equal(view.status, 'shutdown');
    assert.equal(view.shutdown_reason, 'entrypoint_exit');
    const entries = tail.events as { source: string; message?: string | null; exit_code?: number | null }[];
    assert.ok(entries.every((e) => e.source === 'entrypoint'));
    assert.deepEqual(
      entries.filter((e) => e.message).map((e) => e.message),
      ['started', 'finished'],
    );
    assert.equal(entries.at(-1)!.exit_code, 0);
  });

  test('executions of a devbox that stops end with it', async () => {
    const b = await server.sdk().devbox.create();
    const e = await api.devboxes.executeAsync(b.id, { command: 'sleep 1000' });
    await api.devboxes.waitForCommand(b.id, e.execution_id, { statuses: ['running'] });
    await b.shutdown();
    const r = await api.devboxes.executions.retrieve(b.id, e.execution_id);
    assert.deepEqual([r.status, r.exit_status], ['completed', 137]);
    await assert.rejects(api.devboxes.execute(b.id, { command: 'true' }), { status: 400 });
  });
});

describe('a server restart', () => {
  test('ends the executions it left running; the devbox keeps taking commands', async () => {
    const b = await server.sdk().devbox.create();
    const e = await api.devboxes.executeAsync(b.id, { command: 'echo before; sleep 1000' });
    await api.devboxes.waitForCommand(b.id, e.execution_id, { statuses: ['running'] });
    await sleep(200);
    await server.restart();
    const client = server.client();
    const r = await client.devboxes.executions.retrieve(b.id, e.execution_id);
    assert.deepEqual([r.status, r.exit_status, r.stdout], ['completed', null, 'before\n']);
    const { logs } = await client.devboxes.logs.list(b.id, { execution_id: e.execution_id });
    assert.match(logs.at(-1)!.message ?? '', /restarted/);
    const after = await client.devboxes.execute(b.id, { command: 'echo after' });
    assert.equal(after.stdout, 'after\n');
    await client.devboxes.shutdown(b.id);
  });
});
