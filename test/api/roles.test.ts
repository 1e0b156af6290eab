/**
 * DEVBOXD_ROLE=all, the default: the process on the API port holds no privilege at all, the node agent is the
 * one root process, and what lies between them is a socket that asks a token of every call.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runDirOf } from '../../src/roles/layout.js';
import { RemoteRuntime } from '../../src/runtime/rpc/remote-runtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;

function statusOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const [k, v] = line.split(':\t');
    if (k && v !== undefined) out[k] = v.trim();
  }
  return out;
}

/** The pid of the process listening on the server's port. */
function listener(): number {
  const port = new URL(server.url).port;
  const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
  return Number(/pid=(\d+)/.exec(out)![1]);
}

function childrenOf(pid: number): number[] {
  const text = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text ? text.split(' ').map(Number) : [];
}

describe('roles on one host', { timeout: 120_000 }, () => {
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.stop();
  });

  test('the process on the API port runs as the API user with no capability and no_new_privs', () => {
    const api = listener();
    assert.notEqual(api, server.supervisorPid());
    const s = statusOf(api);
    const uid = Number(s.Uid!.split('\t')[0]);
    assert.notEqual(uid, 0);
    assert.ok(
      s.Uid!.split('\t').every((u) => Number(u) === uid),
      `real, effective, saved and fs uid: ${s.Uid}`,
    );
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.equal(BigInt(`0x${s[set]}`), 0n, set);
    assert.equal(s.NoNewPrivs, '1');
    assert.equal(s.Groups, '');
    // Its view of the files is its own: neither the node's data nor the host's checkout path is open to it.
    assert.notEqual(fs.readlinkSync(`/proc/${api}/ns/mnt`), fs.readlinkSync('/proc/self/ns/mnt'));
    const asApi = (argv: string[]) => spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${s.Gid!.split('\t')[0]}`, '--clear-groups', '--', ...argv]);
    assert.notEqual(asApi(['ls', path.join(server.dataDir, 'boxes')]).status, 0);
    assert.notEqual(asApi(['cat', `/proc/${server.supervisorPid()}/environ`]).status, 0);
  });

  test('the node agent is the one root process, and its socket refuses a caller without the token', async () => {
    const kids = childrenOf(server.supervisorPid());
    assert.equal(kids.length, 2);
    const agent = kids.find((p) => statusOf(p).Uid!.startsWith('0\t'))!;
    assert.ok(agent, 'a root child');
    assert.equal(
      kids.filter((p) => p !== agent).every((p) => p === listener()),
      true,
    );
    const socket = path.join(runDirOf(server.dataDir), 'node.sock');
    const st = fs.statSync(socket);
    assert.equal(st.mode & 0o777, 0o660);
    assert.equal(st.uid, 0);
    await assert.rejects(RemoteRuntime.connect({ address: `unix:${socket}`, token: 'x'.repeat(64), readyTimeoutMs: 5_000 }), /cluster token/);
    // With the token the agent holds (root reads it from the agent's environment), the same socket answers.
    const token = /DEVBOXD_CLUSTER_TOKEN=([^\0]+)/.exec(fs.readFileSync(`/proc/${agent}/environ`, 'utf8'))![1]!;
    const remote = await RemoteRuntime.connect({ address: `unix:${socket}`, token });
    assert.ok(remote.baseImageName);
    await remote.close();
  });

  test('a box runs and answers through the agent', async () => {
    const api = server.client();
    const box = await api.devboxes.createAndAwaitRunning({});
    const r = await api.devboxes.executeSync(box.id, { command: 'echo through the agent; id -u' });
    assert.equal(r.stdout, 'through the agent\n1000\n');
    await api.devboxes.shutdown(box.id);
  });

  test('killing the supervisor takes both processes with it; the new API server holds no box disk busy', async () => {
    const api = server.client();
    const box = await api.devboxes.createAndAwaitRunning({});
    const before = childrenOf(server.supervisorPid());
    await server.restart();
    for (const pid of before) assert.equal(fs.existsSync(`/proc/${pid}`) && !statusOf(pid).State?.startsWith('Z'), false, `pid ${pid} outlived its supervisor`);
    // Its namespace began as a copy of the host's mounts, the running box's disk among them: dropped, so the
    // agent can release that disk when the box ends.
    const loops = fs
      .readFileSync(`/proc/${listener()}/mountinfo`, 'utf8')
      .split('\n')
      .filter((l) => / - \S+ \/dev\/loop\d+ /.test(l) && !l.split(' ')[4]!.startsWith('/run/devboxd/view/'));
    assert.deepEqual(loops, []);
    assert.equal((await server.client().devboxes.executeSync(box.id, { command: 'echo adopted' })).stdout, 'adopted\n');
    await server.client().devboxes.shutdown(box.id);
  });
});
