/**
 * The local Linux runtime against the real kernel: real namespaces, cgroups and the real base image
 * (cached in <repo>/data/images, built on first use), with a temp data dir per run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RuntimeDriver, Sandbox, SandboxSpec, SpawnSpec } from '../../src/runtime/driver.js';
import { createRuntime } from '../../src/runtime/index.js';
import { LinuxDriver } from '../../src/runtime/linux/driver.js';
import { ROOT } from '../helpers/server.js';
import { DEFAULT_RANGE_DIR } from '../../src/runtime/linux/idranges.js';

const quiet = { info() {}, warn() {}, error() {} };
const MiB = 1024 * 1024;

let dataDir: string;
let driver: RuntimeDriver;
const made: Sandbox[] = [];

function newDriver(): RuntimeDriver {
  return createRuntime({ dataDir, imageDir: join(ROOT, 'data/images'), logger: quiet });
}

function spec(id: string, over: Partial<SandboxSpec> = {}): SandboxSpec {
  return {
    id,
    hostname: `host-${id}`,
    layers: [],
    limits: { cpuCores: 1, memoryBytes: 256 * MiB, diskBytes: 1024 * MiB, pids: 256 },
    user: { name: 'user', uid: 1000 },
    ...over,
  };
}

async function create(id: string, over: Partial<SandboxSpec> = {}): Promise<Sandbox> {
  const sb = await driver.create(spec(id, over));
  made.push(sb);
  return sb;
}

interface Result {
  code: number | null;
  signal: string | null;
  out: string;
  err: string;
}

async function run(sb: Sandbox, argv: string[], opts: Omit<SpawnSpec, 'argv'> & { input?: string } = {}): Promise<Result> {
  const p = sb.spawn({ argv, ...opts });
  p.stdin.end(opts.input ?? '');
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const ended = Promise.all([new Promise((r) => p.stdout.on('close', r)), new Promise((r) => p.stderr.on('close', r))]);
  const exit = await p.exited;
  await ended;
  return { code: exit.exitCode, signal: exit.signal, out, err };
}

const sh = (sb: Sandbox, script: string, opts: Omit<SpawnSpec, 'argv'> & { input?: string } = {}) => run(sb, ['sh', '-c', script], opts);

/** True while the host pid runs (a zombie left for a lazy reaper counts as dead). */
function hostAlive(pid: number): boolean {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A /proc file, or '' once its process has ended. */
function readIfThere(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function statePid(id: string): number {
  return JSON.parse(readFileSync(join(dataDir, 'boxes', id, 'state.json'), 'utf8')).pid as number;
}

function cgroupDirs(id: string): string[] {
  const roots = ['/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids', '/sys/fs/cgroup/cpu', '/sys/fs/cgroup'];
  return roots.map((r) => join(r, 'devboxd', id)).filter((d) => existsSync(d));
}

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'devboxd-rt-'));
  driver = newDriver();
  await driver.prepare(); // builds the base image the first time on this machine (about a minute)
});

after(async () => {
  for (const sb of made) await sb.destroy().catch(() => undefined);
  await driver.close?.(); // unmounts the disks it held ready
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a box is isolated', () => {
  let sb: Sandbox;
  before(async () => {
    sb = await create('iso');
  });

  it('has its own hostname, PID namespace and runs as the non-root box user', async () => {
    const r = await sh(sb, 'hostname; echo $$; id -u; id -un; pwd; echo $HOME; cat /proc/1/comm');
    assert.equal(r.code, 0, r.err);
    const [host, pid, uid, name, cwd, home, init] = r.out.trim().split('\n');
    assert.equal(host, 'host-iso');
    assert.ok(Number(pid) < 20, `shell pid ${pid} is small inside the box`);
    assert.equal(uid, '1000');
    assert.equal(name, 'user');
    assert.equal(cwd, '/home/user');
    assert.equal(home, '/home/user');
    assert.equal(init, 'boxinit');
  });

  it('cannot see the host files', async () => {
    const marker = join(tmpdir(), `devboxd-marker-${process.pid}`);
    writeFileSync(marker, 'secret');
    try {
      const r = await sh(sb, `ls ${marker} 2>&1; ls /work 2>&1; ls ${dataDir} 2>&1; echo done`);
      assert.match(r.out, /No such file/);
      assert.doesNotMatch(r.out, /secret/);
      assert.equal(r.out.match(/No such file/g)?.length, 3, r.out);
    } finally {
      rmSync(marker, { force: true });
    }
  });

  it('has only a loopback network and cannot reach the host loopback', async () => {
    const server = createServer((s) => s.end('host-service\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const r = await sh(sb, `cat /proc/net/route | wc -l; ip -o link | awk '{print $2}'; curl -sS -m 2 http://127.0.0.1:${port}/ 2>&1; echo rc=$?`);
      const lines = r.out.trim().split('\n');
      assert.equal(lines[0], '1', 'no routes besides the header line');
      assert.equal(lines[1], 'lo:');
      assert.doesNotMatch(r.out, /host-service/);
      assert.match(r.out, /rc=[1-9]/);
    } finally {
      server.close();
    }
  });

  it('runs with no_new_privs, seccomp and no capabilities; cannot make a user namespace', async () => {
    const r = await sh(sb, 'grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status; unshare -U true; echo unshare=$?');
    assert.match(r.out, /NoNewPrivs:\s+1/);
    assert.match(r.out, /Seccomp:\s+2/);
    assert.match(r.out, /CapEff:\s+0000000000000000/);
    assert.match(r.out, /unshare=1/);
  });

  it('sees its own cgroup with the memory limit, and nproc follows the cpu limit', async () => {
    const r = await sh(
      sb,
      'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; nproc; touch /sys/fs/cgroup/x 2>&1 || echo ro',
    );
    const [limit, nproc] = r.out.trim().split('\n');
    assert.equal(Number(limit), 256 * MiB);
    assert.equal(nproc, '1');
    assert.match(r.out, /Read-only file system/);
  });

  it('writes land in its own writable layer, owned by the shifted uid', async () => {
    const r = await sh(sb, 'echo data > ~/file.txt && mkdir -p /tmp/d && echo ok');
    assert.equal(r.out, 'ok\n', r.err);
    const st = statSync(join(dataDir, 'boxes', 'iso', 'disk', 'upper', 'home', 'user', 'file.txt'));
    assert.equal(st.uid, 1_001_000);
  });

  it('passes env, cwd and stdin; root when asked', async () => {
    const r = await run(sb, ['sh', '-c', 'echo "$FOO $LANG $(pwd)"; cat'], { env: { FOO: 'bar' }, cwd: '/tmp', input: 'from-stdin' });
    assert.equal(r.out, 'bar C.UTF-8 /tmp\nfrom-stdin');
    const root = await sh(sb, 'id -u; touch /etc/made-by-root && echo ok', { asRoot: true });
    assert.equal(root.out, '0\nok\n', root.err);
    const missing = await run(sb, ['no-such-command']);
    assert.equal(missing.code, 127);
  });

  it('streams large stdin and stdout both ways', async () => {
    const input = 'x'.repeat(3 * MiB + 17);
    const r = await run(sb, ['sh', '-c', 'wc -c; head -c 2000000 /dev/zero | tr "\\0" y'], { input });
    assert.equal(r.out.slice(0, r.out.indexOf('\n')), String(input.length));
    assert.equal(r.out.length - r.out.indexOf('\n') - 1, 2_000_000);
  });

  it('runs commands without the exec daemon too', async () => {
    const plain = new LinuxDriver({ dataDir, imageDir: join(ROOT, 'data/images'), logger: quiet, execDaemon: false });
    const same = await plain.adopt(spec('iso'));
    assert.ok(same);
    const r = await run(same, ['sh', '-c', 'echo "$FOO"; id -u; cat; exit 3'], { env: { FOO: 'plain' }, input: 'in' });
    assert.deepEqual(r, { code: 3, signal: null, out: 'plain\n1000\nin', err: '' });
    // The environment travels to boxexec as arguments: it must be off /proc/PID/cmdline (world-readable on
    // the host) while the command runs.
    const marker = 'sv-cmdline-3c9e1f';
    const p = same.spawn({ argv: ['sleep', '1'], env: { TOKEN: marker } });
    p.stdin.end();
    p.stdout.resume();
    p.stderr.resume();
    await new Promise((r) => setTimeout(r, 300));
    const showing = readdirSync('/proc')
      .filter((pid) => /^\d+$/.test(pid))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(marker);
        } catch {
          return false; // gone meanwhile
        }
      });
    assert.deepEqual(showing, [], 'a command line shows the environment');
    assert.equal((await p.exited).exitCode, 0);
  });

  it('signals a whole process group', async () => {
    const p = sb.spawn({ argv: ['sh', '-c', 'sleep 300 & sleep 300 & wait'] });
    p.stdin.end();
    p.stdout.resume();
    p.stderr.resume();
    await new Promise((r) => setTimeout(r, 200));
    p.signal('SIGTERM', true);
    const exit = await p.exited;
    assert.equal(exit.signal, 'SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    const ps = await sh(sb, 'ps -eo comm | grep -c sleep || true');
    assert.equal(ps.out.trim(), '0');
  });

  it('reports stats', async () => {
    const s = await sb.stats();
    assert.equal(s.memoryLimitBytes, 256 * MiB);
    assert.ok(s.memoryBytes > 0);
    assert.ok(s.cpuMicros > 0);
    assert.ok(s.diskBytes > 0);
    assert.ok(s.pids >= 1);
    assert.equal(s.oomKills, 0);
  });
});

describe('limits', () => {
  it('OOM-kills a memory hog and counts it', async () => {
    const sb = await create('oom', { limits: { cpuCores: 1, memoryBytes: 64 * MiB, diskBytes: 1024 * MiB, pids: 64 } });
    const r = await run(sb, ['python3', '-c', 'b = bytearray(512 * 1024 * 1024); print("survived")']);
    assert.equal(r.signal, 'SIGKILL');
    assert.doesNotMatch(r.out, /survived/);
    assert.ok((await sb.stats()).oomKills >= 1);
    assert.equal((await sh(sb, 'echo alive')).out, 'alive\n', 'the box survives the OOM kill');
  });

  it('caps the number of processes', async () => {
    const sb = await create('pids', { limits: { cpuCores: 1, memoryBytes: 256 * MiB, diskBytes: 1024 * MiB, pids: 20 } });
    const script =
      'import os,time\nn=0\ntry:\n  for i in range(100):\n    if os.fork()==0:\n      time.sleep(30); os._exit(0)\n    n+=1\nexcept OSError: pass\nprint(n)';
    const p = sb.spawn({ argv: ['python3', '-c', script] });
    p.stdin.end();
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.resume();
    await p.exited;
    assert.ok(Number(out) > 0 && Number(out) < 20, `forked ${out.trim()} children under pids.max=20`);
  });
});

describe('disk', () => {
  it("is a filesystem of the box's size: ENOSPC at it, df and stats show it", async () => {
    const sb = await create('small-disk', { limits: { cpuCores: 1, memoryBytes: 256 * MiB, diskBytes: 64 * MiB, pids: 64 } });
    const df = await sh(sb, 'df -B1 --output=size,itotal / | tail -1');
    const [size, inodes] = df.out.trim().split(/\s+/).map(Number);
    assert.ok(Math.abs(size! - 64 * MiB) < 2 * MiB, `df size ${size}`);
    assert.ok(inodes! >= 8192 && inodes! < 9000, `df inodes ${inodes}`);
    const r = await sh(sb, 'head -c 100M /dev/zero > f; echo "rc=$?"');
    assert.match(r.err, /No space left on device/);
    assert.notEqual(r.out.trim(), 'rc=0');
    const used = (await sb.stats()).diskBytes;
    assert.ok(used > 60 * MiB && used <= 64 * MiB, `stats diskBytes ${used}`);
  });

  it('has I/O caps on its own device', async () => {
    const sb = await create('io-caps');
    const slot = realpathSync(join(dataDir, 'boxes', 'io-caps', 'disk'));
    const line = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find((l) => l.split(' ')[4] === slot);
    const dev = line!.split(' ')[2]!;
    assert.equal(readFileSync(`/sys/class/bdi/${dev}/strict_limit`, 'utf8').trim(), '1');
    const v1 = '/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device';
    const rules = existsSync(v1) ? readFileSync(v1, 'utf8') : readFileSync(`/sys/fs/cgroup/devboxd/io-caps/io.max`, 'utf8');
    assert.match(rules, new RegExp(`^${dev} (209715200|.*wbps=209715200)`, 'm'));
    const backing = `/sys/dev/block/${dev}/loop/backing_file`;
    const backingOf = () => (existsSync(backing) ? readFileSync(backing, 'utf8').trim() : '');
    const ours = backingOf();
    await sb.destroy();
    // The rule goes with the box, unless a box of a test file running beside this one took the freed loop
    // device at once (its own rule then names the same device): a device backed by another file is not ours.
    const now = backingOf();
    if (existsSync(v1) && (now === '' || now === ours)) assert.doesNotMatch(readFileSync(v1, 'utf8'), new RegExp(`^${dev} `, 'm'));
  });
});

describe('lifecycle', () => {
  it('snapshots the writable layer for new boxes (files and deletions)', async () => {
    const src = await create('snapsrc');
    await sh(src, 'echo layered > ~/kept.txt; rm /etc/issue', { asRoot: true });
    await sh(src, 'echo mine > ~/mine.txt');
    const { sizeBytes } = await src.snapshot('layer-a');
    assert.ok(sizeBytes > 0);
    assert.equal(await driver.layerExists('layer-a'), true);
    assert.ok((await driver.layerSize('layer-a')) > 0);
    assert.equal((await sh(src, 'echo still-running')).out, 'still-running\n', 'the box is thawed');

    const dst = await create('snapdst', { layers: ['layer-a'] });
    const r = await sh(
      dst,
      'cat /root/kept.txt 2>/dev/null || cat ~/kept.txt 2>/dev/null; cat ~/mine.txt; ls /etc/issue 2>&1; hostname; ls -l ~/mine.txt | cut -d" " -f3',
    );
    assert.match(r.out, /mine\n/);
    assert.match(r.out, /No such file/);
    assert.match(r.out, /host-snapdst\n/);
    assert.match(r.out, /user\n$/);
    await dst.destroy();
    await driver.deleteLayer('layer-a');
    assert.equal(await driver.layerExists('layer-a'), false);
  });

  it('commands are forked inside the box: pids.max refuses them, the cap on concurrent ones holds, the forker ends with the box', async () => {
    const sb = await create('forker', { limits: { cpuCores: 1, memoryBytes: 256 * MiB, diskBytes: 1024 * MiB, pids: 40 } });
    const group = cgroupDirs('forker').find((d) => existsSync(join(d, 'pids.max')))!;
    const bomb =
      'import os, time\nwhile True:\n  try: pid = os.fork()\n  except OSError: break\n  if pid == 0: os.execv("/bin/sleep", ["sleep", "60"])\nprint("held", flush=True)\ntime.sleep(60)';
    const held = sb.spawn({ argv: ['python3', '-c', bomb] });
    held.stdin.end();
    await new Promise((r) => held.stdout.once('data', r));
    assert.equal(readFileSync(join(group, 'pids.current'), 'utf8').trim(), '40');
    const r = await sh(sb, 'echo never');
    assert.equal(r.code, 125);
    assert.match(r.err, /process limit \(pids\.max\)/);
    assert.equal(readFileSync(join(group, 'pids.current'), 'utf8').trim(), '40', 'the refused command took no slot');
    held.signal('SIGKILL', true);
    await held.exited;

    const state = JSON.parse(readFileSync(join(dataDir, 'boxes', 'forker', 'state.json'), 'utf8')) as { idBase: number };
    const slot = join(DEFAULT_RANGE_DIR, String((state.idBase - 1_000_000) / 65_536));
    assert.equal(readlinkSync(slot), join(dataDir, 'boxes', 'forker'), 'the box holds its id range');
    const forker = spawnSync('pgrep', ['-x', 'boxforkd'], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')
      // Other files' boxes run beside this one: their forkers may end between pgrep and the read.
      .filter((pid) => readIfThere(`/proc/${pid}/cgroup`).includes('/devboxd/forker\n'));
    assert.equal(forker.length, 1, 'one forker, in the box cgroup');
    await sb.destroy();
    assert.equal(hostAlive(Number(forker[0])), false, 'the forker ended with the box');
    assert.equal(existsSync(slot), false, 'the id range is free again');
  });

  it('destroy leaves nothing behind and is idempotent', async () => {
    const sb = await create('gone');
    const pid = statePid('gone');
    assert.ok(hostAlive(pid));
    assert.ok(cgroupDirs('gone').length > 0);
    await sb.destroy();
    await sb.destroy();
    assert.equal(hostAlive(pid), false);
    assert.deepEqual(cgroupDirs('gone'), []);
    assert.equal(existsSync(join(dataDir, 'boxes', 'gone')), false);
    assert.ok(!(await driver.listSandboxes()).includes('gone'));
  });

  it('is adopted by a fresh driver (thawed if a snapshot was cut short) and removed by id', async () => {
    await create('adopt');
    const freezer = ['/sys/fs/cgroup/freezer/devboxd/adopt/freezer.state', '/sys/fs/cgroup/devboxd/adopt/cgroup.freeze'].find((f) => existsSync(f));
    if (freezer) writeFileSync(freezer, freezer.endsWith('state') ? 'FROZEN' : '1');
    const fresh = newDriver();
    assert.ok((await fresh.listSandboxes()).includes('adopt'));
    const again = await fresh.adopt(spec('adopt'));
    assert.ok(again);
    assert.equal((await sh(again, 'hostname')).out, 'host-adopt\n');
    assert.equal(await fresh.adopt(spec('never-created')), null);
    await fresh.remove('adopt');
    assert.ok(!(await fresh.listSandboxes()).includes('adopt'));
    assert.deepEqual(cgroupDirs('adopt'), []);
  });

  it('reports a box whose init was killed from outside', async () => {
    const sb = await create('dies');
    process.kill(statePid('dies'), 'SIGKILL');
    const died = await Promise.race([sb.died.then(() => true), new Promise((r) => setTimeout(() => r(false), 3000))]);
    assert.equal(died, true);
    // Dead, but its disk and cgroup are still there: a restart must find it to remove it.
    assert.ok((await newDriver().listSandboxes()).includes('dies'));
    await sb.destroy();
    assert.ok(!(await driver.listSandboxes()).includes('dies'));
  });
});
