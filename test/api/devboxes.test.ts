import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => server?.stop());

async function sh(box: Devbox, cmd: string): Promise<{ out: string; code: number | null }> {
  const r = await box.cmd.exec(cmd);
  return { out: (await r.stdout()).trim(), code: r.exitCode };
}

async function waitFor(id: string, statuses: string[], ms = 30_000) {
  const api = server.client();
  const until = Date.now() + ms;
  for (;;) {
    const d = await api.devboxes.retrieve(id);
    if (statuses.includes(d.status)) return d;
    if (Date.now() > until) throw new Error(`devbox ${id} still ${d.status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('a devbox is a real sandbox', () => {
  let box: Devbox;
  before(async () => {
    box = await server.sdk().devbox.create({ name: 'iso-box' });
  });
  after(async () => box?.shutdown());

  test('runs as a non-root user in its own PID namespace with its own hostname', async () => {
    const info = await box.getInfo();
    assert.equal(info.status, 'running');
    assert.deepEqual(
      info.state_transitions.map((t) => t.status),
      ['provisioning', 'initializing', 'running'],
    );
    assert.equal((await sh(box, 'id -un')).out, 'user');
    assert.equal((await sh(box, 'id -u')).out, '1000');
    assert.equal((await sh(box, 'hostname')).out, 'iso-box');
    // PID 1 is the box's own init; the host's processes are invisible.
    assert.equal((await sh(box, 'ps -p 1 -o comm=')).out, 'boxinit');
    assert.ok(Number((await sh(box, 'ps -e --no-headers | wc -l')).out) < 10);
    assert.equal((await sh(box, 'echo $HOME; pwd')).out, '/home/user\n/home/user');
    assert.equal((await sh(box, 'grep NoNewPrivs /proc/self/status')).out.replace(/\s+/g, ' '), 'NoNewPrivs: 1');
    assert.equal((await sh(box, 'grep "^Seccomp:" /proc/self/status')).out.replace(/\s+/g, ' '), 'Seccomp: 2');
    assert.equal((await sh(box, 'grep CapEff /proc/self/status')).out.replace(/\s+/g, ' '), 'CapEff: 0000000000000000');
    assert.notEqual((await sh(box, 'unshare -U true')).code, 0);
  });

  test('cannot see host files or reach the host loopback', async () => {
    const marker = `/tmp/devboxd-host-marker-${process.pid}`;
    fs.writeFileSync(marker, 'host secret');
    try {
      assert.notEqual((await sh(box, `cat ${marker}`)).code, 0);
      assert.notEqual((await sh(box, `ls ${server.dataDir}`)).code, 0);
      const port = new URL(server.url).port;
      const r = await sh(box, `timeout 3 bash -c 'echo > /dev/tcp/127.0.0.1/${port}' && echo reached || echo refused`);
      assert.equal(r.out.split('\n').at(-1), 'refused');
      // Its only routes go through its own link, whose host end refuses the API too (network.test.ts has the rest).
      const routes = (await sh(box, 'cat /proc/net/route | tail -n +2')).out.split('\n').filter(Boolean);
      assert.ok(
        routes.every((l) => l.startsWith('eth0\t')),
        routes.join('\n'),
      );
      const gw = (await sh(box, "awk '/^nameserver/ {print $2}' /etc/resolv.conf")).out.trim();
      const viaLink = await sh(box, `timeout 3 bash -c 'echo > /dev/tcp/${gw}/${port}' && echo reached || echo refused`);
      assert.equal(viaLink.out.split('\n').at(-1), 'refused');
    } finally {
      fs.rmSync(marker);
    }
  });

  test('has python3, git and curl', async () => {
    assert.equal((await sh(box, 'python3 -c "print(6*7)" && git --version >/dev/null && curl --version >/dev/null')).out, '42');
  });
});

describe('sizes become cgroup limits', () => {
  for (const [size, cpus, gib] of [
    ['X_SMALL', 0.5, 1],
    ['MEDIUM', 2, 4],
  ] as const) {
    test(`${size}: ${cpus} CPU, ${gib} GiB`, async () => {
      const box = await server.sdk().devbox.create({ launch_parameters: { resource_size_request: size } });
      try {
        const mem = (await sh(box, 'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes')).out;
        assert.equal(Number(mem), gib * 1024 ** 3);
        const cpu = (
          await sh(
            box,
            'cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"',
          )
        ).out;
        const [quota, period] = cpu.split(/\s+/).map(Number);
        assert.equal(quota! / period!, cpus);
        assert.equal(Number((await sh(box, 'nproc')).out), Math.max(1, Math.floor(cpus)));
      } finally {
        await box.shutdown();
      }
    });
  }

  test('CUSTOM_SIZE without cores is refused with a 400 naming the field', async () => {
    const err = (await server
      .client({ maxRetries: 0 })
      .devboxes.create({ launch_parameters: { resource_size_request: 'CUSTOM_SIZE' } })
      .catch((e) => e)) as { status: number; message: string };
    assert.equal(err.status, 400);
    assert.match(err.message, /custom_cpu_cores/);
  });
});

describe('lifecycle', () => {
  test('shutdown ends the box with api_shutdown and an end time', async () => {
    const api = server.client();
    const d = await api.devboxes.createAndAwaitRunning({});
    const s = await api.devboxes.shutdown(d.id);
    assert.equal(s.status, 'shutdown');
    assert.equal(s.shutdown_reason, 'api_shutdown');
    assert.ok(s.end_time_ms);
    assert.equal(d.end_time_ms, null);
  });

  test('update: omitted fields stay, empty name and metadata clear', async () => {
    const api = server.client();
    const d = await api.devboxes.create({ name: 'n1', metadata: { a: '1' } });
    assert.equal((await api.devboxes.update(d.id, { metadata: { b: '2' } })).name, 'n1');
    const cleared = await api.devboxes.update(d.id, { name: '', metadata: {} });
    assert.equal(cleared.name ?? null, null);
    assert.deepEqual(cleared.metadata, {});
    await api.devboxes.shutdown(d.id);
  });

  test('wait_for_status holds, then answers 408', async () => {
    const d = await server.client().devboxes.createAndAwaitRunning({});
    const res = await fetch(`${server.url}/v1/devboxes/${d.id}/wait_for_status`, {
      method: 'POST',
      headers: { authorization: `Bearer ${'ak_test_admin_key_0123456789abcdef'}`, 'content-type': 'application/json' },
      body: JSON.stringify({ statuses: ['suspended'], timeout_seconds: 1 }),
    });
    assert.equal(res.status, 408);
    await server.client().devboxes.shutdown(d.id);
  });

  test('keep_alive_time_seconds ends an untouched box with keep_alive_timeout', async () => {
    const d = await server.client().devboxes.createAndAwaitRunning({ launch_parameters: { keep_alive_time_seconds: 2 } });
    const end = await waitFor(d.id, ['shutdown', 'failure']);
    assert.equal(end.shutdown_reason, 'keep_alive_timeout');
  });

  test('after_idle shutdown ends an idle box with idle', async () => {
    const d = await server.client().devboxes.createAndAwaitRunning({
      launch_parameters: { after_idle: { idle_time_seconds: 2, on_idle: 'shutdown' } },
    });
    const end = await waitFor(d.id, ['shutdown', 'failure']);
    assert.equal(end.shutdown_reason, 'idle');
  });

  test('exceeding memory ends the box in failure/out_of_memory', async () => {
    const box = await server.sdk().devbox.create({ launch_parameters: { resource_size_request: 'X_SMALL' } });
    await box.cmd.execAsync('python3 -c "b = bytearray(3 * 1024**3)"');
    const end = await waitFor(box.id, ['shutdown', 'failure']);
    assert.equal(end.failure_reason, 'out_of_memory');
  });

  test('list filters by status and paginates', async () => {
    const api = server.client();
    const running = await api.devboxes.list({ status: 'running', limit: 100 });
    for (const d of running.devboxes) assert.equal(d.status, 'running');
    const first = await api.devboxes.list({ limit: 2 });
    assert.equal(first.devboxes.length, 2);
    assert.equal(first.has_more, true);
    const ids = new Set<string>();
    for await (const d of api.devboxes.list({ limit: 3 })) ids.add(d.id);
    assert.equal(ids.size, first.total_count);
  });

  test("list search (devboxd's; the SDK does not send it) finds an exact id or part of a name, any case, paged", async () => {
    const api = server.client();
    type DevboxPage = { devboxes: { id: string; name: string | null }[]; has_more: boolean; total_count: number };
    const search = (q: Record<string, unknown>) => api.get<unknown, DevboxPage>('/v1/devboxes', { query: q });
    const tag = `srch${process.pid}`;
    const a = await api.devboxes.create({ name: `${tag}-One` });
    const b = await api.devboxes.create({ name: `x-${tag.toUpperCase()}_two` });
    const other = await api.devboxes.create({ name: 'unrelated' });
    try {
      const all = await search({ search: tag, limit: 10 });
      assert.deepEqual(all.devboxes.map((d) => d.id).sort(), [a.id, b.id].sort());
      assert.equal(all.total_count, 2);
      const first = await search({ search: tag.toUpperCase(), limit: 1 });
      assert.equal(first.has_more, true);
      assert.equal(first.total_count, 2);
      const next = await search({ search: tag.toUpperCase(), limit: 1, starting_after: first.devboxes[0]!.id });
      assert.deepEqual([...first.devboxes, ...next.devboxes].map((d) => d.id).sort(), [a.id, b.id].sort());
      assert.equal(next.has_more, false);
      assert.deepEqual(
        (await search({ search: other.id })).devboxes.map((d) => d.id),
        [other.id],
        'the exact id',
      );
      assert.deepEqual((await search({ search: `${tag}_one` })).devboxes, [], '_ is not a wildcard');
      assert.deepEqual((await search({ search: tag, status: 'shutdown' })).devboxes, [], 'with a status');
    } finally {
      for (const d of [a, b, other]) await api.devboxes.shutdown(d.id);
    }
  });

  test('foreign and unknown ids are 404', async () => {
    const err = (await server
      .client({ maxRetries: 0 })
      .devboxes.retrieve('dbx_nope')
      .catch((e) => e)) as { status: number };
    assert.equal(err.status, 404);
  });
});

describe('server restart', () => {
  test('running boxes are adopted; boxes whose sandbox vanished end with a reason', async () => {
    const keep = await server.sdk().devbox.create({});
    const lost = await server.sdk().devbox.create({});
    await keep.cmd.exec('echo kept > note');
    await server.restart({
      whileDown: () => {
        const { pid } = JSON.parse(fs.readFileSync(`${server.dataDir}/boxes/${lost.id}/state.json`, 'utf8')) as { pid: number };
        process.kill(pid, 'SIGKILL');
      },
    });
    const gone = await waitFor(lost.id, ['failure', 'shutdown']);
    assert.equal(gone.failure_reason, 'health_check_failed');
    assert.ok(gone.state_transitions.at(-1)?.failure_reason);
    const after = await server.client().devboxes.retrieve(keep.id);
    assert.equal(after.status, 'running');
    const again = await server.sdk().devbox.fromId(keep.id).cmd.exec('cat note');
    assert.equal((await again.stdout()).trim(), 'kept');
    await server.client().devboxes.shutdown(keep.id);
  });
});
