/**
 * Layers moved between two drivers (two data dirs, as two nodes have): exportLayer on one, importLayer on
 * the other gives the same files, owners, modes, xattrs, hard links, holes, whiteouts and opaque marks; and
 * an import of a hostile archive (a path out of the layer, through a symlink, a device, too many bytes, a mark
 * on a symlink, a cut or changed archive) is refused with nothing left under the layer's id or outside it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { LinuxDriver } from '../../src/runtime/linux/driver.js';
import { BOX_ID_BASE } from '../../src/runtime/linux/paths.js';
import { ROOT } from '../helpers/server.js';
import { makeTar, type TarEntry } from '../helpers/tar.js';

const quiet = { info() {}, warn() {}, error() {} };
let work: string;
let a: LinuxDriver;
let b: LinuxDriver;

const driver = (name: string, maxBytes = 2 ** 30) =>
  new LinuxDriver({ dataDir: join(work, name), imageDir: join(ROOT, 'data/images'), logger: quiet, layerImport: { maxBytes, minFreeBytes: 0 } });

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'devboxd-layer-archive-'));
  a = driver('a');
  b = driver('b', 8 * 2 ** 20);
  await Promise.all([a.prepare(), b.prepare()]);
});

after(async () => {
  await a?.close().catch(() => undefined);
  await b?.close().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});

/** Every entry under `dir`: type, owner, mode, size, mtime and contents (or link target, device number). */
function snapshotOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of ['.', ...(readdirSync(dir, { recursive: true }) as string[])].sort()) {
    const p = join(dir, rel);
    const st = lstatSync(p);
    const what = st.isFile()
      ? createHash('sha256').update(readFileSync(p)).digest('hex').slice(0, 12)
      : st.isSymbolicLink()
        ? `-> ${readlinkSync(p)}`
        : `rdev ${st.rdev}`;
    out[rel] = `${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.isDirectory() ? '' : st.size} ${Math.floor(st.mtimeMs)} ${what}`;
  }
  return out;
}

/** Reads (value undefined) or sets an xattr of a path, not following a symlink (Node has no xattr calls). */
function xattr(path: string, name: string, value?: string): string | null {
  const get = 'import os,sys\ntry: print(os.getxattr(sys.argv[1],sys.argv[2],follow_symlinks=False).hex(),end="")\nexcept OSError: pass';
  const set = 'import os,sys; os.setxattr(sys.argv[1],sys.argv[2],bytes.fromhex(sys.argv[3]),follow_symlinks=False)';
  const args = value === undefined ? [get, path, name] : [set, path, name, Buffer.from(value).toString('hex')];
  const r = spawnSync('python3', ['-c', ...args]);
  assert.equal(r.status, 0, r.stderr.toString());
  const hex = r.stdout.toString();
  return hex ? Buffer.from(hex, 'hex').toString() : null;
}

describe('a layer moved to another node', () => {
  it('keeps files, owners, modes, xattrs, hard links, holes, whiteouts and opaque directories', async () => {
    const src = join(work, 'a', 'layers', 'lyr_src');
    const user = BOX_ID_BASE + 1000;
    mkdirSync(join(src, 'home/dev/opaque'), { recursive: true });
    writeFileSync(join(src, 'home/dev/file'), 'written in the box\n', { mode: 0o640 });
    linkSync(join(src, 'home/dev/file'), join(src, 'home/dev/hard'));
    symlinkSync('file', join(src, 'home/dev/link'));
    writeFileSync(join(src, 'home/dev/opaque/new'), 'shadowing\n');
    spawnSync('truncate', ['-s', '64M', join(src, 'home/dev/sparse')]);
    writeFileSync(join(src, 'home/dev/sparse'), 'end', { flag: 'a' });
    spawnSync('mknod', [join(src, 'home/dev/gone'), 'c', '0', '0']);
    spawnSync('mkfifo', [join(src, 'home/dev/fifo')]);
    writeFileSync(join(src, 'suid'), '#!/bin/sh\n', { mode: 0o4755 });
    spawnSync('chown', ['-R', `${BOX_ID_BASE}:${BOX_ID_BASE}`, src]);
    for (const p of ['home/dev', 'home/dev/file', 'home/dev/opaque', 'home/dev/opaque/new', 'home/dev/sparse']) chownSync(join(src, p), user, user);
    spawnSync('chown', ['-h', `${user}:${user}`, join(src, 'home/dev/link')]);
    spawnSync('chmod', ['4755', join(src, 'suid')]);
    xattr(join(src, 'home/dev/file'), 'user.origin', 'box');
    xattr(join(src, 'home/dev/opaque'), 'trusted.overlay.opaque', 'y');
    // Names this host's inodes: not carried.
    xattr(join(src, 'home/dev'), 'trusted.overlay.origin', 'x');

    await b.importLayer('lyr_src', await a.exportLayer('lyr_src'));
    const dst = join(work, 'b', 'layers', 'lyr_src');
    assert.deepEqual(snapshotOf(dst), snapshotOf(src), 'the same tree: names, types, owners, modes, sizes, contents, link targets');
    const st = (p: string) => lstatSync(join(dst, p));
    assert.equal(st('home/dev/file').ino, st('home/dev/hard').ino, 'hard links stay one file');
    assert.equal(st('home/dev/file').uid, user);
    assert.equal(st('home/dev/link').uid, user, 'a symlink keeps its owner');
    assert.ok(st('home/dev/gone').isCharacterDevice() && st('home/dev/gone').rdev === 0, 'the whiteout is one again');
    assert.ok(st('home/dev/fifo').isFIFO());
    assert.equal(st('suid').mode & 0o7777, 0o4755, 'set-id bits stay');
    assert.equal(st('home/dev/sparse').size, 64 * 2 ** 20 + 3);
    assert.ok(st('home/dev/sparse').blocks * 512 < 2 ** 20, 'the hole stays a hole');
    assert.equal(xattr(join(dst, 'home/dev/file'), 'user.origin'), 'box');
    assert.equal(xattr(join(dst, 'home/dev/opaque'), 'trusted.overlay.opaque'), 'y');
    assert.equal(xattr(join(dst, 'home/dev'), 'trusted.overlay.origin'), null);
    // Importing a layer that is here keeps it.
    await b.importLayer('lyr_src', await a.exportLayer('lyr_src'));
    assert.ok(await b.layerExists('lyr_src'));
  });

  it('refuses to export a layer it does not have', async () => {
    await assert.rejects(a.exportLayer('lyr_nothing'), /does not exist/);
  });
});

/** An archive as exportLayer frames it, around any tar and marks (a hostile node's or blob store's). */
function framed(tar: Buffer, marks = Buffer.alloc(0)): Buffer {
  const z = spawnSync('zstd', ['-q', '-c'], { input: tar });
  const head = Buffer.alloc(12);
  head.write('DBXLAYR1');
  head.writeUInt32BE(marks.length, 8);
  const body = Buffer.concat([head, marks, z.stdout]);
  const tail = Buffer.alloc(48);
  tail.write('DBXLEND1');
  tail.writeBigUInt64BE(BigInt(body.length), 8);
  createHash('sha256').update(body).digest().copy(tail, 16);
  return Buffer.concat([body, tail]);
}

describe('a hostile archive', () => {
  const outside = () => join(work, 'outside');
  const nothingLeft = (id: string) => {
    assert.equal(existsSync(join(work, 'b', 'layers', id)), false, 'no layer under the id');
    const stray = readdirSync(join(work, 'b', 'layers')).filter((n) => n.startsWith('.tmp-') || n.endsWith('.marks') || n.endsWith('.stage'));
    assert.deepEqual(stray, [], 'no temporary copy left');
    assert.equal(existsSync(outside()), false, 'nothing written outside the layer');
  };
  const refused = async (id: string, archive: Buffer, why: RegExp) => {
    await assert.rejects(b.importLayer(id, Readable.from([archive])), why);
    nothingLeft(id);
  };

  it('with a path out of the layer', async () => {
    await refused('lyr_dotdot', framed(makeTar([{ name: `../../../../../../..${outside()}`, data: 'x' }])), /refused.*'\.\.'/);
  });

  it('with a file written through a symlink', async () => {
    const tar = makeTar([
      { name: 'l', type: 'symlink', linkname: work },
      { name: 'l/outside', data: 'x' },
    ]);
    await refused('lyr_symlink', framed(tar), /refused.*Not a directory/);
  });

  it('with a device node', async () => {
    const tar = makeTar([{ name: 'null', type: 'chardev', devmajor: 1, devminor: 3 } as TarEntry]);
    await refused('lyr_device', framed(tar), /refused.*mknod/);
  });

  it('larger than the import bound', async () => {
    const big = Buffer.alloc(9 * 2 ** 20, 7);
    await refused('lyr_big', framed(makeTar([{ name: 'big', data: big }])), /more than 8388608 bytes/);
  });

  it('marking a directory through a symlink or out of the layer', async () => {
    const tar = makeTar([{ name: 'l', type: 'symlink', linkname: '/etc' }]);
    await refused('lyr_mark', framed(tar, Buffer.from('l\0')), /refused.*open the marked directory/);
    await refused('lyr_mark2', framed(makeTar([{ name: 'd', type: 'dir' }]), Buffer.from('d/../..\0')), /marks a path no layer has/);
  });

  it('cut short or changed on the way', async () => {
    const good = framed(makeTar([{ name: 'f', data: 'fine' }]));
    // Which part notices first (the trailer check, zstd or tar) is a race: any of them refuses it.
    await refused('lyr_cut', good.subarray(0, good.length - 10), /cut short or damaged|not valid zstd|refused/);
    const changed = Buffer.from(good);
    changed[20] ^= 1;
    await refused('lyr_changed', changed, /cut short or damaged|not valid zstd|refused/);
    await refused('lyr_other', Buffer.from('PK\u0003\u0004 not a layer'), /not a layer archive/);
    // The same archive, untouched, is a layer.
    await b.importLayer('lyr_fine', Readable.from([good]));
    assert.ok(await b.layerExists('lyr_fine'));
  });
});
