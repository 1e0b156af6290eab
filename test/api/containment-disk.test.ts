/**
 * Containment of a box's disk (issue 11, item 1): the kernel enforces the quota at write time, bytes and
 * inodes, files deleted but held open included; a full box keeps running with ENOSPC inside, like a real
 * disk; `df` shows the box's own size; the host and other boxes are unaffected; snapshots, suspend/resume
 * and a server restart keep the quota.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { startTestServer, type TestServer } from '../helpers/server.js';

const GiB = 1024 ** 3;

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => server?.stop());

async function sh(box: Devbox, cmd: string): Promise<{ out: string; err: string; code: number | null }> {
  const r = await box.cmd.exec(cmd);
  return { out: (await r.stdout()).trim(), err: (await r.stderr()).trim(), code: r.exitCode };
}

/** Bytes the box's disk takes on the host (allocated blocks of its image). */
function hostBytes(id: string): number {
  return fs.statSync(`${fs.realpathSync(path.join(server.dataDir, 'boxes', id, 'disk'))}.img`).blocks * 512;
}

/** `df -B1 --output=size,used,itotal /` in the box. */
async function df(box: Devbox): Promise<{ size: number; used: number; inodes: number }> {
  const r = await sh(box, 'df -B1 --output=size,used,itotal / | tail -1');
  const [size, used, inodes] = r.out.trim().split(/\s+/).map(Number);
  return { size: size!, used: used!, inodes: inodes! };
}

describe('a box with custom_disk_size: 1', () => {
  let box: Devbox;
  before(async () => {
    box = await server.sdk().devbox.create({ launch_parameters: { custom_disk_size: 1 } });
  });
  after(async () => box?.shutdown());

  test('df inside shows the box its own 1 GiB disk', async () => {
    const d = await df(box);
    assert.ok(Math.abs(d.size - GiB) < 0.02 * GiB, `df size ${d.size}`);
    assert.equal((await sh(box, 'df -h --output=size / | tail -1')).out, '1.0G');
    assert.ok(d.inodes >= 65_536 && d.inodes < 70_000, `df inodes ${d.inodes}`);
  });

  test('writing 2 GiB gets ENOSPC; at most 1 % over the quota reaches the host; the box keeps running', async () => {
    const r = await sh(box, 'head -c 2G /dev/zero > big; echo "rc=$?"; ls -l big | cut -d" " -f5');
    assert.match(r.err, /No space left on device/);
    const [rc, size] = r.out.split('\n');
    assert.notEqual(rc, 'rc=0');
    assert.ok(Number(size) <= GiB && Number(size) > 0.9 * GiB, `file of ${size} bytes`);
    assert.ok(hostBytes(box.id) <= 1.01 * GiB, `image holds ${hostBytes(box.id)} bytes on the host`);
    assert.equal((await box.getInfo()).status, 'running');
    // Like a real disk: freeing space makes it writable again, and the host gets the blocks back.
    assert.equal((await sh(box, 'rm big && echo more > small && cat small')).out, 'more');
    const until = Date.now() + 10_000;
    while (hostBytes(box.id) > 0.1 * GiB && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    assert.ok(hostBytes(box.id) < 0.1 * GiB, `image still holds ${hostBytes(box.id)} bytes after rm`);
  });

  test('a file deleted but held open counts: the trick gets ENOSPC too', async () => {
    const r = await sh(box, 'exec 3>held; rm held; head -c 2G /dev/zero >&3; echo "rc=$?"; df -B1 --output=used / | tail -1; exec 3>&-');
    assert.match(r.err, /No space left on device/);
    const [rc, used] = r.out.split('\n');
    assert.notEqual(rc, 'rc=0');
    assert.ok(Number(used) > 0.9 * GiB, `df used ${used} while the deleted file was open`);
    assert.ok(hostBytes(box.id) <= 1.01 * GiB, `image holds ${hostBytes(box.id)} bytes on the host`);
    // Closed: the space is free again (once the kernel evicted the inode, which a loaded host may defer).
    let after = (await df(box)).used;
    for (const until = Date.now() + 10_000; after >= 0.1 * GiB && Date.now() < until; after = (await df(box)).used)
      await new Promise((r) => setTimeout(r, 200));
    assert.ok(after < 0.1 * GiB, `df used ${after} after the deleted file was closed`);
  });

  test('creating 300k empty files stops at the inode limit', async () => {
    const r = await sh(
      box,
      `python3 -c '
import os, errno
os.makedirs("many", exist_ok=True)
n = 0
try:
    for n in range(300000):
        open(f"many/{n}", "w").close()
except OSError as e:
    print(n, errno.errorcode[e.errno])
else:
    print(n + 1, "none")
'`,
    );
    const [made, err] = r.out.split(' ');
    assert.equal(err, 'ENOSPC', r.out + r.err);
    assert.ok(Number(made) < 70_000 && Number(made) > 60_000, `made ${made} files`);
    assert.ok(hostBytes(box.id) < 0.1 * GiB, `image holds ${hostBytes(box.id)} bytes on the host`);
    assert.equal((await sh(box, 'rm -rf many && touch ok && echo ok')).out, 'ok');
  });
});

describe('neighbours and the disk lifecycle', () => {
  test('a full box leaves another box its own disk', async () => {
    const sdk = server.sdk();
    const [full, other] = await Promise.all([
      sdk.devbox.create({ launch_parameters: { custom_disk_size: 1 } }),
      sdk.devbox.create({ launch_parameters: { custom_disk_size: 2 } }),
    ]);
    try {
      await sh(full, 'head -c 2G /dev/zero > big');
      assert.match((await sh(full, 'echo x > more')).err, /No space left on device/);
      const r = await sh(other, 'head -c 100M /dev/zero > f && echo ok');
      assert.equal(r.out, 'ok', r.err);
      assert.ok(Math.abs((await df(other)).size - 2 * GiB) < 0.02 * 2 * GiB);
    } finally {
      await Promise.all([full.shutdown(), other.shutdown()]);
    }
    // Shut down: nothing of either disk is left on the host.
    for (const b of [full, other]) assert.equal(fs.existsSync(path.join(server.dataDir, 'boxes', b.id)), false);
  });

  test('snapshot, suspend, resume and a server restart keep the data and the quota', async () => {
    const sdk = server.sdk();
    const box = await sdk.devbox.create({ launch_parameters: { custom_disk_size: 1 } });
    try {
      assert.equal((await sh(box, 'head -c 100M /dev/urandom > data && md5sum data | cut -c1-32')).code, 0);
      const sum = (await sh(box, 'md5sum data | cut -c1-32')).out;

      const snap = await box.snapshotDisk({ name: 'quota-snap' });
      const child = await sdk.devbox.create({ snapshot_id: snap.id, launch_parameters: { custom_disk_size: 1 } });
      try {
        assert.equal((await sh(child, 'md5sum data | cut -c1-32')).out, sum);
        assert.match((await sh(child, 'head -c 2G /dev/zero > big')).err, /No space left on device/);
      } finally {
        await child.shutdown();
      }

      await box.suspend();
      await server.client().devboxes.awaitSuspended(box.id);
      assert.equal((await box.resume()).status, 'running');
      assert.equal((await sh(box, 'md5sum data | cut -c1-32')).out, sum);
      assert.ok(Math.abs((await df(box)).size - GiB) < 0.02 * GiB);
      assert.match((await sh(box, 'head -c 2G /dev/zero > big')).err, /No space left on device/);
      await sh(box, 'rm big');

      await server.restart();
      assert.equal((await box.getInfo()).status, 'running');
      assert.equal((await sh(box, 'md5sum data | cut -c1-32')).out, sum);
      assert.match((await sh(box, 'head -c 2G /dev/zero > big')).err, /No space left on device/);
      assert.ok(hostBytes(box.id) <= 1.01 * GiB);
    } finally {
      await box.shutdown();
    }
  });
});
