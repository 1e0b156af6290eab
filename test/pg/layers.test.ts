/**
 * Two servers (node-a and node-b, each with its own data dir) on one PostgreSQL database and one S3 bucket:
 * a disk snapshot taken on node-a boots on node-b, and so does a blueprint built on node-a, with everything
 * the box wrote read back through node-b (contents, the box user's files, a hard link, an xattr, files of
 * the base image deleted, a directory of it replaced); a repository inspection on node-b in that blueprint
 * fetches its layers first. A suspended box's disk is in the blob store once it
 * shows suspended; a deleted snapshot's layer leaves the blob store and node-b's copy.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { type GitServer, startGitServer } from '../helpers/git-server.js';
import { listObjects, startTestS3, type TestS3 } from '../helpers/s3.js';
import { sharedTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';

let db: { url: string; release(): Promise<void> };
let s3: TestS3;
let a: TestServer;
let b: TestServer;
let git: GitServer;
const boxes: Devbox[] = [];
const PREFIX = 'cluster';

before(async () => {
  db = await sharedTestDatabase();
  s3 = await startTestS3();
  git = await startGitServer();
  git.addRepo('acme', 'tiny', { 'requirements.txt': '# none\n' });
  // Layers need no network: boxes with a loopback only leave the host's nftables alone.
  const shared = { DEVBOXD_DATABASE_URL: db.url, DEVBOXD_NETWORK: 'off', ...s3.env(PREFIX) };
  // One after the other: the first start creates the default account both admin keys belong to.
  a = await startTestServer({ ...shared, DEVBOXD_NODE_NAME: 'node-a' });
  // node-b logs its fetches (a test counts them).
  b = await startTestServer({ ...shared, DEVBOXD_NODE_NAME: 'node-b', DEVBOXD_LOG_LEVEL: 'info', DEVBOXD_GIT_BASE_URL: git.url });
});
after(async () => {
  for (const box of boxes) await box.shutdown().catch(() => undefined);
  await a?.stop();
  await b?.stop();
  await s3?.stop();
  await git?.close();
  await db?.release();
});

async function sh(box: Devbox, cmd: string): Promise<string> {
  const r = await box.cmd.exec(cmd);
  assert.equal(r.exitCode, 0, `${cmd} failed: ${await r.stderr()}`);
  return (await r.stdout()).trim();
}

const storedLayers = async () => Object.keys(await listObjects(s3.client(), s3.bucket, `${PREFIX}/layers/`));
// What the box user writes (no capabilities: a file of the base image it owns is what it can delete, and
// that deletion is a whiteout in the layer), and what a box of its snapshot reads back on either node.
const WRITE = `set -e
rm ~/.bashrc
mkdir ~/work && echo "made on node-a" > ~/work/note.txt
ln ~/work/note.txt ~/work/again.txt
python3 -c "import os; os.setxattr(os.path.expanduser('~/work/note.txt'), 'user.origin', b'node-a')"
head -c 3000000 /dev/urandom > ~/blob && sha256sum ~/blob | cut -d' ' -f1 > ~/blob.sha
sync`;
const READ = `set -e
test ! -e ~/.bashrc && test -e ~/.profile && echo bashrc-gone
cat ~/work/note.txt
stat -c '%U %G %h %a' ~/work/note.txt
python3 -c "import os; print(os.getxattr(os.path.expanduser('~/work/note.txt'), 'user.origin').decode())"
[ "$(stat -c %i ~/work/note.txt)" = "$(stat -c %i ~/work/again.txt)" ] && echo one-inode
sha256sum ~/blob | cut -d' ' -f1 | cmp - ~/blob.sha && echo blob-intact`;
const READ_BACK = 'bashrc-gone\nmade on node-a\nuser user 2 644\nnode-a\none-inode\nblob-intact';

test('a disk snapshot taken on node-a boots on node-b, with all the box wrote', async () => {
  const source = await a.sdk().devbox.create();
  boxes.push(source);
  await sh(source, WRITE);
  const snap = await source.snapshotDisk({ name: 'moves' });
  assert.ok(fs.existsSync(path.join(a.dataDir, 'layers', `${snap.id}.img`)), 'the layer is a disk image on node-a');

  // Two boxes of it booting on node-b at once: one fetch of the layer, which both stand on.
  const [moved, second] = await Promise.all([b.sdk().devbox.create({ snapshot_id: snap.id }), b.sdk().devbox.create({ snapshot_id: snap.id })]);
  boxes.push(moved, second);
  assert.equal(await sh(moved, READ), READ_BACK);
  assert.equal(await sh(second, 'cat ~/work/again.txt'), 'made on node-a');
  assert.ok(fs.statSync(path.join(b.dataDir, 'layers', snap.id)).isDirectory(), 'node-b made the layer from the blob store');
  const fetched = b
    .output()
    .split('\n')
    .filter((l) => l.includes(snap.id) && l.includes('layer fetched from the blob store'));
  assert.equal(fetched.length, 1, 'fetched once');
  assert.ok((await storedLayers()).includes(snap.id));

  // Deleting the snapshot once nothing stands on it deletes the blob and node-b's copy.
  await second.shutdown();
  await moved.shutdown();
  await b.client().devboxes.diskSnapshots.delete(snap.id);
  assert.ok(!(await storedLayers()).includes(snap.id), 'the blob went with the snapshot');
  assert.ok(!fs.existsSync(path.join(b.dataDir, 'layers', snap.id)), "node-b's copy went with it");
});

test('a layer whose blob was changed in the bucket is refused: the box fails saying so, node-b keeps nothing', async () => {
  const source = await a.sdk().devbox.create();
  boxes.push(source);
  await sh(source, 'echo original > ~/f');
  const snap = await source.snapshotDisk({ name: 'tampered' });
  // Once its upload finished (an object shows only whole), its bytes are replaced.
  while (!(await storedLayers()).includes(snap.id)) await new Promise((r) => setTimeout(r, 100));
  const { PutObjectCommand } = await import('@aws-sdk/client-s3');
  const Body = Buffer.from(`not the archive of ${snap.id}`);
  await s3.client().send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${PREFIX}/layers/${snap.id}`, Body }));
  const api = b.client();
  const created = await api.devboxes.create({ snapshot_id: snap.id });
  let d = await api.devboxes.retrieve(created.id);
  while (d.status === 'provisioning') {
    await new Promise((r) => setTimeout(r, 200));
    d = await api.devboxes.retrieve(created.id);
  }
  assert.equal(d.status, 'failure');
  assert.match(d.state_transitions.at(-1)?.failure_reason ?? JSON.stringify(d), /not the one uploaded/);
  assert.equal(fs.existsSync(path.join(b.dataDir, 'layers', snap.id)), false);
});

test('a blueprint built on node-a boots on node-b: a repository inspection in it, and a box', async () => {
  const api = a.client({ maxRetries: 0 });
  const created = await api.blueprints.create({
    name: 'moves-bp',
    dockerfile: `FROM runloop:runloop/starter-x86_64
RUN rm /etc/issue && rm -r /etc/skel && mkdir /etc/skel && echo mine > /etc/skel/only
RUN mkdir -p /opt/app && echo built-on-a > /opt/app/version && ln /opt/app/version /opt/app/v && chown -R user:user /opt/app
ENV MOVED=yes
`,
  });
  let bp = await api.blueprints.retrieve(created.id);
  while (bp.status !== 'build_complete' && bp.status !== 'failed') {
    await new Promise((r) => setTimeout(r, 200));
    bp = await api.blueprints.retrieve(created.id);
  }
  assert.equal(bp.status, 'build_complete', JSON.stringify(bp));
  const bLayers = () => fs.readdirSync(path.join(b.dataDir, 'layers')).filter((n) => n.startsWith('bpl_'));
  assert.deepEqual(bLayers(), []);

  // A repository inspected in it on node-b (the node that took the request runs the inspection): its box
  // boots there, on the layers fetched first.
  const bApi = b.client({ maxRetries: 0 });
  const repo = (await bApi.post('/v1/repositories', { body: { owner: 'acme', name: 'tiny', blueprint_id: bp.id } })) as { id: string };
  const { inspections } = (await bApi.get(`/v1/repositories/${repo.id}/inspections`)) as { inspections: { id: string }[] };
  let inspection: { status: string; failure_reason?: string } = { status: 'inspection_pending' };
  for (let i = 0; i < 600 && inspection.status === 'inspection_pending'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    inspection = (await bApi.get(`/v1/repositories/inspections/${inspections[0]!.id}`)) as typeof inspection;
  }
  assert.equal(inspection.status, 'inspection_success', inspection.failure_reason);
  assert.equal(bLayers().length, 2, `node-b fetched the two RUN steps' layers: ${bLayers()}`);

  const box = await b.sdk().devbox.create({ blueprint_id: bp.id });
  boxes.push(box);
  const fetched = bLayers();
  assert.equal(fetched.length, 2, `node-b's box stands on those two layers: ${fetched}`);
  assert.equal(
    await sh(box, 'cat /opt/app/version; stat -c "%U %h" /opt/app/version; test ! -e /etc/issue && echo issue-gone; ls -A /etc/skel; echo $MOVED'),
    'built-on-a\nuser 2\nissue-gone\nonly\nyes',
  );
  await box.shutdown();
});

test("a suspended box's disk is in the blob store once the box shows suspended", async () => {
  const box = await a.sdk().devbox.create();
  boxes.push(box);
  await sh(box, 'echo kept > ~/kept');
  const api = a.client();
  await api.devboxes.suspend(box.id);
  assert.equal((await api.devboxes.awaitSuspended(box.id)).status, 'suspended');
  const snaps = (await api.devboxes.diskSnapshots.list({ devbox_id: box.id, limit: 100 })).snapshots;
  const layer = snaps.find((s) => s.metadata?.devboxd_suspend === 'true')?.id;
  assert.ok(layer && (await storedLayers()).includes(layer), 'the suspend snapshot is stored');
  await api.devboxes.resume(box.id);
  await api.devboxes.awaitRunning(box.id);
  assert.equal(await sh(box, 'cat ~/kept'), 'kept');
});
