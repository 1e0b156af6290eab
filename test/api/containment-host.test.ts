/**
 * Containment, issue 11 items 8 and 9: what a box sees of the host (mount paths, boot arguments, the exec
 * launcher) and what other host users see of the server's data (nothing).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { ROOT, startTestServer, type TestServer, runInBox } from '../helpers/server.js';
import { SQL_GID } from '../../src/resources/axons/sql-process.js';

const IMAGE_DIR = path.join(ROOT, 'data/images');

let server: TestServer;
let api: Runloop;
before(async () => {
  // An image dir left open (as an earlier devboxd made it) is closed by the server at start.
  fs.chmodSync(IMAGE_DIR, 0o755);
  server = await startTestServer();
  api = server.client();
});
after(async () => server?.stop());

const sh = (boxId: string, command: string) => runInBox(api, boxId, command);

/**
 * Runs a host command as `nobody`, an ordinary host user. Through `sh`: setpriv execs its command while it
 * still holds root's capabilities, so only a process started by a capability-less one tests the path.
 */
function asNobody(argv: string[]) {
  return spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'sh', '-c', 'exec "$@"', 'sh', ...argv], { encoding: 'utf8' });
}

describe('containment: what a box sees of the host', () => {
  let box: string;
  let fromSnapshot: string;
  before(async () => {
    box = (await api.devboxes.createAndAwaitRunning({ name: 'host-view' })).id;
    await sh(box, 'echo layered > marker');
    const snap = await api.devboxes.snapshotDisk(box, { name: 'host-view' });
    fromSnapshot = (await api.devboxes.createAndAwaitRunning({ name: 'host-view-2', snapshot_id: snap.id })).id;
  });
  after(async () => {
    await Promise.all([box, fromSnapshot].filter(Boolean).map((id) => api.devboxes.shutdown(id).catch(() => undefined)));
  });

  test('/proc/self/mountinfo names no host path, for the image and for snapshot layers', async () => {
    for (const id of [box, fromSnapshot]) {
      const r = await sh(id, 'cat /proc/self/mountinfo; cat marker 2>/dev/null || true');
      assert.equal(r.code, 0);
      for (const hostPath of [server.dataDir, IMAGE_DIR, ROOT, '/boxes/', '/layers/', '/images/', id]) {
        assert.ok(!r.out.includes(hostPath), `mountinfo of ${id} shows ${hostPath}:\n${r.out}`);
      }
      const root = r.out.split('\n').find((l) => / \/ \/ /.test(l)) ?? '';
      const layers = id === box ? 'lower/0' : 'lower/0:lower/1';
      assert.match(root, new RegExp(`overlay overlay rw,lowerdir=${layers},upperdir=disk/upper,workdir=disk/work`));
    }
    assert.match((await sh(fromSnapshot, 'cat marker')).out, /layered/);
  });

  test("boot arguments and runc's masked paths read empty", async () => {
    assert.ok(fs.readFileSync('/proc/cmdline', 'utf8').length > 0, 'the host has boot arguments to hide');
    const r = await sh(
      box,
      'for f in /proc/cmdline /proc/keys /proc/timer_list /proc/sched_debug /proc/kcore; do [ -e $f ] && echo "$f $(head -c 100 $f | wc -c)"; done; echo "firmware $(ls -A /sys/firmware | wc -l)"',
    );
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trim().split('\n');
    assert.ok(lines.includes('/proc/cmdline 0'), r.out);
    assert.ok(lines.includes('firmware 0'), r.out);
    for (const l of lines) assert.match(l, / 0$/, `not masked: ${l}`);
  });

  test('no process in the box ever shows capabilities or a host command line while commands start', async () => {
    await api.devboxes.uploadFile(box, { path: '/tmp/try-syscall', file: fs.createReadStream(path.join(ROOT, 'native/build/try-syscall')) });
    await sh(box, 'chmod +x /tmp/try-syscall');
    const watcher = await api.devboxes.executeAsync(box, { command: '/tmp/try-syscall --watch 8000' });
    // Commands keep starting while the watcher scans /proc: each start is a window in which a launcher that
    // entered the PID namespace before dropping its privileges would be seen. At least 3.5 s of them and 20
    // starts, within the watch (a loaded host starts fewer per second).
    const started = Date.now();
    let runs = 0;
    while ((Date.now() - started < 3500 || runs < 20) && Date.now() - started < 7000) {
      await Promise.all(Array.from({ length: 4 }, () => api.devboxes.execute(box, { command: 'true' })));
      runs += 4;
    }
    const r = await api.devboxes.executions.awaitCompleted(box, watcher.execution_id);
    const out = r.stdout ?? '';
    assert.equal(r.exit_status, 0, r.stderr ?? '');
    assert.ok(runs >= 20, `only ${runs} commands started`);
    assert.ok(Number(/scans (\d+)/.exec(out)?.[1]) > 100, out);
    assert.doesNotMatch(out, /^leak /m);
  });
});

describe('containment: what other host users see of the data', () => {
  test('the data and image dirs are 0700 and nothing in the data dir is open to group or others', async () => {
    const box = (await api.devboxes.createAndAwaitRunning({ name: 'perm-box' })).id;
    assert.equal((await sh(box, 'echo secret > notes; cat /etc/os-release | head -1')).code, 0);
    await api.devboxes.snapshotDisk(box, { name: 'perm-snap' });
    for (const dir of [server.dataDir, IMAGE_DIR]) assert.equal(fs.statSync(dir).mode & 0o777, 0o700, dir);

    // Box disks and snapshot layers hold the box's own files with the box's own modes: they are reached only
    // through a 0700 directory. Everything else is root's alone.
    const content = (p: string) => /\/boxes\/[^/]+\/(upper|work|root)$/.test(p) || /\/layers\/[^/]+$/.test(p) || /\/disks\/pool\/[^/]+$/.test(p);
    const open: string[] = [];
    let seen = 0;
    const walk = (dir: string) => {
      for (const name of fs.readdirSync(dir)) {
        const p = path.join(dir, name);
        const st = fs.lstatSync(p);
        seen++;
        if (st.isSymbolicLink()) continue;
        if (content(p)) {
          if ((fs.statSync(dir).mode & 0o077) !== 0) open.push(`${dir} (holds ${name})`);
          continue;
        }
        // The axons' SQL databases and the SQL processes' runtime directory (their script and addon) are open
        // to those processes' own group (no host user or box has it).
        const sqlGroup = /\/(axons|runtime\/axon-sql)(\/[^/]+)?$/.test(p) && st.gid === SQL_GID && (st.mode & 0o007) === 0;
        if ((st.mode & 0o077) !== 0 && !sqlGroup) open.push(`${p} ${(st.mode & 0o777).toString(8)}`);
        if (st.isDirectory()) walk(p);
      }
    };
    walk(server.dataDir);
    assert.ok(seen > 10, `only ${seen} entries`);
    assert.deepEqual(open, []);
    await api.devboxes.shutdown(box);
  });

  test('a data dir and database left open are closed again at start', async () => {
    const db = path.join(server.apiDir, 'devboxd.db');
    await server.restart({
      whileDown: () => {
        fs.chmodSync(server.dataDir, 0o755);
        fs.chmodSync(db, 0o644);
      },
    });
    assert.equal(fs.statSync(server.dataDir).mode & 0o777, 0o700);
    assert.equal(fs.statSync(db).mode & 0o777, 0o600);
  });

  test('an ordinary host user can list nothing, read nothing and run no box binary', () => {
    assert.notEqual(asNobody(['ls', server.dataDir]).status, 0);
    assert.notEqual(asNobody(['cat', path.join(server.apiDir, 'devboxd.db')]).status, 0);
    assert.notEqual(asNobody(['ls', IMAGE_DIR]).status, 0);
    const image = fs.readdirSync(IMAGE_DIR).find((n) => n.startsWith('bookworm-'))!;
    const su = path.join(IMAGE_DIR, image, 'usr/bin/su');
    assert.ok(fs.statSync(su).mode & 0o4000, 'su in the image is setuid (owned by the box id range)');
    const r = asNobody([su, '--version']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /Permission denied/);
  });
});
