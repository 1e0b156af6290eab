/**
 * The copies and checksums of `devboxd backup` on real files, as root (src/ops/backup/copy.ts, digest.ts): a
 * layer directory as layers hold them (files of box ids, a whiteout device, a hard link, a symlink, a file with
 * holes) keeps its tree digest hard-linked and copied, and a changed owner or byte changes it; a disk image's
 * chunk digest depends on its bytes only (not on where its holes are) and costs nothing for its holes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { placeFile, placeTree } from '../../src/ops/backup/copy.js';
import { chunkDigest, treeDigest } from '../../src/ops/backup/digest.js';

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-backup-copy-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a layer tree keeps its digest linked and copied, owners, devices, links and holes included', async () => {
  const src = path.join(dir, 'layer');
  fs.mkdirSync(path.join(src, 'etc'), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(src, 'etc/conf'), 'setting=1\n', { mode: 0o640 });
  fs.chownSync(path.join(src, 'etc/conf'), 1_000_005, 1_000_005);
  fs.linkSync(path.join(src, 'etc/conf'), path.join(src, 'conf-link'));
  fs.symlinkSync('etc/conf', path.join(src, 'conf-symlink'));
  execFileSync('mknod', [path.join(src, 'etc/removed'), 'c', '0', '0']);
  const holes = path.join(src, 'holes');
  fs.writeFileSync(holes, '');
  fs.truncateSync(holes, 16 << 20);
  fs.writeSync(fs.openSync(holes, 'r+'), 'data', 5 << 20);

  const linked = path.join(dir, 'linked');
  const copied = path.join(dir, 'copied');
  assert.ok(await placeTree(src, linked, true));
  assert.ok(await placeTree(src, copied, false));
  const want = await treeDigest(src);
  assert.equal(want.entries, 6);
  assert.deepEqual(await treeDigest(linked), want);
  assert.deepEqual(await treeDigest(copied), want);
  assert.equal(fs.statSync(path.join(linked, 'etc/conf')).ino, fs.statSync(path.join(src, 'etc/conf')).ino);
  const copy = fs.statSync(path.join(copied, 'etc/conf'));
  assert.notEqual(copy.ino, fs.statSync(path.join(src, 'etc/conf')).ino);
  assert.equal(copy.uid, 1_000_005);
  assert.equal(fs.statSync(path.join(copied, 'conf-link')).ino, copy.ino, 'hard links stay links');
  assert.ok(fs.statSync(path.join(copied, 'etc/removed')).isCharacterDevice());
  assert.ok(fs.statSync(path.join(copied, 'holes')).blocks * 512 < 1 << 20, 'holes stay holes');

  fs.chownSync(path.join(copied, 'etc/conf'), 1_000_006, 1_000_005);
  assert.notEqual((await treeDigest(copied)).digest, want.digest);
  fs.chownSync(path.join(copied, 'etc/conf'), 1_000_005, 1_000_005);
  fs.writeFileSync(path.join(copied, 'etc/conf'), 'setting=2\n');
  assert.notEqual((await treeDigest(copied)).digest, want.digest);
  assert.equal(await placeTree(path.join(dir, 'gone'), path.join(dir, 'gone-copy'), false), false, 'a tree deleted meanwhile');
});

test('a disk image: the chunk digest reads its data only and is the same wherever its holes are', async () => {
  const image = path.join(dir, 'disk.img');
  fs.writeFileSync(image, '');
  fs.truncateSync(image, 20 * 2 ** 30);
  const fd = fs.openSync(image, 'r+');
  fs.writeSync(fd, Buffer.alloc(4096, 7), 0, 4096, 3 * 2 ** 30 + 100);
  fs.closeSync(fd);
  const started = Date.now();
  const sum = await chunkDigest(image);
  assert.ok(Date.now() - started < 5000, `20 GiB of holes took ${Date.now() - started} ms`);

  const copy = path.join(dir, 'copy.img');
  assert.ok(await placeFile(image, copy, false));
  assert.ok(fs.statSync(copy).blocks * 512 < 1 << 20, 'the copy keeps the holes');
  assert.equal(await chunkDigest(copy), sum);

  // The same bytes written out in full (no holes at all): the same digest.
  const small = path.join(dir, 'small.img');
  fs.writeFileSync(small, '');
  fs.truncateSync(small, 5 << 20);
  fs.writeSync(fs.openSync(small, 'r+'), 'x', 3 << 20);
  const full = path.join(dir, 'full.img');
  fs.writeFileSync(full, fs.readFileSync(small));
  assert.equal(await chunkDigest(full), await chunkDigest(small));
  fs.writeSync(fs.openSync(full, 'r+'), 'y', 3 << 20);
  assert.notEqual(await chunkDigest(full), await chunkDigest(small));
  assert.equal(await placeFile(path.join(dir, 'gone.img'), path.join(dir, 'gone-copy.img'), true), false, 'a file deleted meanwhile');
});
