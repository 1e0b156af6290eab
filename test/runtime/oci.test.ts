/**
 * Images from registries, end to end on the real kernel: an image built here (umoci, a static busybox) and
 * pushed (skopeo) to registries started here on 127.0.0.1 (docker-registry; a token-auth front that
 * redirects blobs; fake registries that lie), pulled by the Linux driver and booted as a box.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isImageLayer, type Sandbox } from '../../src/runtime/driver.js';
import { LinuxDriver } from '../../src/runtime/linux/driver.js';
import { ImageLayers, imageLayerId } from '../../src/runtime/linux/image-layers.js';
import { DataPaths } from '../../src/runtime/linux/paths.js';
import { pullImage } from '../../src/runtime/oci/pull.js';
import { RegistryClient } from '../../src/runtime/oci/registry.js';
import { randomBytes } from 'node:crypto';
import { buildImage, fakeImage, pushImage, sha256, startFakeRegistry, startFront, startRegistry, type FakeRegistry, type Front, type Running } from '../helpers/registry.js';
import { ROOT } from '../helpers/server.js';
import { makeTar } from '../helpers/tar.js';

const quiet = { info() {}, warn() {}, error() {} };
const MiB = 1024 * 1024;
const alice = { user: 'alice', password: 's3cret' };

let work: string;
const drivers: LinuxDriver[] = [];
const running: Running[] = [];
const boxes: Sandbox[] = [];
let secured: Running; // htpasswd
let open: Running; // anonymous, behind `front`
let front: Front;
let fake: FakeRegistry;
let pushedDigest: string;
let driver: LinuxDriver;

function newDriver(name: string): LinuxDriver {
  const d = new LinuxDriver({ dataDir: join(work, name), imageDir: join(ROOT, 'data/images'), logger: quiet, registry: { insecure: ['127.0.0.1'] } });
  drivers.push(d);
  return d;
}

async function run(sb: Sandbox, script: string, asRoot = false): Promise<{ code: number | null; out: string; err: string }> {
  const p = sb.spawn({ argv: ['sh', '-c', script], asRoot });
  p.stdin.end();
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const ended = Promise.all([new Promise((r) => p.stdout.on('close', r)), new Promise((r) => p.stderr.on('close', r))]);
  const exit = await p.exited;
  await ended;
  return { code: exit.exitCode, out, err };
}

function layerDirs(d: string): string[] {
  return readdirSync(join(work, d, 'layers')).filter((n) => n !== '.mnt' && n !== '.configs');
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'devboxd-oci-'));
  secured = await startRegistry(join(work, 'reg-secured'), alice);
  open = await startRegistry(join(work, 'reg-open'));
  running.push(secured, open);
  const { layout, tag } = buildImage(join(work, 'image'));
  pushedDigest = pushImage(layout, tag, `${secured.host}/team/busybox:1`, alice);
  assert.equal(pushImage(layout, tag, `${open.host}/team/busybox:1`), pushedDigest);
  front = await startFront(open.host, { user: 'bob', password: 'hunter2', redirectBlobs: true });
  fake = await startFakeRegistry();
  running.push(front, fake);
  driver = newDriver('data');
  await driver.prepare();
});

after(async () => {
  for (const b of boxes) await b.destroy().catch(() => undefined);
  for (const d of drivers) await d.close().catch(() => undefined);
  for (const r of running) await r.stop().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});

describe('pulling an image', () => {
  it('pulls by tag with basic auth: the pushed digest, its layers newest first, its config', async () => {
    const lines: string[] = [];
    const img = await driver.pullImage(`${secured.host}/team/busybox:1`, { auth: { username: 'alice', password: 's3cret' }, onProgress: (l) => lines.push(l) });
    assert.equal(img.digest, pushedDigest);
    assert.equal(img.layers.length, 3);
    for (const l of img.layers) {
      assert.ok(isImageLayer(l), l);
      assert.ok(await driver.layerExists(l));
    }
    // Newest first: the hand-made opaque layer is on top.
    assert.ok(existsSync(join(work, 'data/layers', img.layers[0]!, 'opq2/fresh')));
    assert.ok(existsSync(join(work, 'data/layers', img.layers[2]!, 'bin/busybox')));
    assert.ok(img.config.env.includes('GREETING=hello'), img.config.env.join(' '));
    assert.equal(img.config.workingDir, '/data');
    assert.equal(img.config.user, '1000:1000');
    assert.deepEqual(img.config.entrypoint, ['/bin/sh']);
    assert.deepEqual(img.config.cmd, ['-c', 'echo hi']);
    assert.deepEqual(img.config.exposedPorts, ['8080/tcp']);
    assert.equal(img.config.labels?.['org.test'], 'yes');
    assert.ok(lines.some((l) => l.includes('fetched')), lines.join('\n'));
  });

  it('pulls by digest, from the cache', async () => {
    const lines: string[] = [];
    const img = await driver.pullImage(`${secured.host}/team/busybox@${pushedDigest}`, { auth: { username: 'alice', password: 's3cret' }, onProgress: (l) => lines.push(l) });
    assert.equal(img.digest, pushedDigest);
    assert.equal(lines.filter((l) => l.endsWith(': cached')).length, 3, lines.join('\n'));
  });

  it('refuses a pull without credentials, with a wrong password, and of a missing tag', async () => {
    const ref = `${secured.host}/team/busybox:1`;
    await assert.rejects(driver.pullImage(ref), /requires credentials/);
    await assert.rejects(driver.pullImage(ref, { auth: { username: 'alice', password: 'wrong' } }), /refused the credentials/);
    await assert.rejects(driver.pullImage(`${secured.host}/team/busybox:nope`, { auth: { username: 'alice', password: 's3cret' } }), (err: Error & { code?: string }) => err.code === 'not_found');
    await assert.rejects(driver.pullImage('NOT a ref'), /invalid image reference/);
  });

  it('speaks the bearer-token flow, follows blob redirects without the token, and a cached pull fetches no blob', async () => {
    const cold = newDriver('data-token');
    const ref = `${front.host}/team/busybox:1`;
    await assert.rejects(cold.pullImage(ref, { auth: { username: 'bob', password: 'nope' } }), /refused the credentials/);
    front.log.length = 0;
    const img = await cold.pullImage(ref, { auth: { username: 'bob', password: 'hunter2' } });
    assert.equal(img.digest, pushedDigest);
    assert.ok(front.log.includes(`GET /token?service=front&scope=${encodeURIComponent('repository:team/busybox:pull')}`), front.log.join('\n'));
    // The config and three layers, each redirected to the storage origin (which refuses credentials).
    assert.equal(front.log.filter((l) => l.startsWith('storage GET')).length, 4, front.log.join('\n'));
    front.log.length = 0;
    const again = await cold.pullImage(ref, { auth: { username: 'bob', password: 'hunter2' } });
    assert.deepEqual(again.layers, img.layers);
    assert.deepEqual(front.log.filter((l) => l.includes('/blobs/')), [], front.log.join('\n'));
    assert.equal(front.log.filter((l) => l.includes('/token')).length, 0, 'the token is reused');
  });
});

describe('a box on image layers', () => {
  it('boots on the image alone: whiteouts applied, the box user made, the base image not underneath', async () => {
    const img = await driver.pullImage(`${secured.host}/team/busybox:1`, { auth: { username: 'alice', password: 's3cret' } });
    const box = await driver.create({
      id: 'oci-box-1',
      hostname: 'oci',
      layers: img.layers,
      limits: { cpuCores: 1, memoryBytes: 256 * MiB, diskBytes: 1024 * MiB, pids: 256 },
      user: { name: 'user', uid: 1000 },
    });
    boxes.push(box);
    const r = await run(box, 'cat /data/keep; ls /data; echo "opq: $(ls /opq)"; echo "opq2: $(ls /opq2)"; id -u; echo "home=$HOME"; test -d "$HOME" && echo home-ok; test -e /usr/bin/apt && echo DEBIAN; grep ^user: /etc/passwd; touch "$HOME/x" && echo writable');
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'keep\nkeep\nopq: new\nopq2: fresh\n1000\nhome=/home/user\nhome-ok\nuser:x:1000:1000:user:/home/user:/bin/bash\nwritable\n');
    const root = await run(box, 'id -u; echo root > /data/by-root && cat /data/by-root', true);
    assert.equal(root.out, '0\nroot\n', root.err);
  });
});

describe('hostile registries', () => {
  it('refuses a layer whose bytes are not its digest and keeps nothing of it', async () => {
    const fakeDigest = sha256('something else');
    fakeImage(fake, 'lie/layer', '1', makeTar([{ name: 'a', data: 'a' }]), { layerDigest: fakeDigest });
    await assert.rejects(driver.pullImage(`${fake.host}/lie/layer:1`), /failed verification/);
    assert.ok(!existsSync(join(work, 'data/layers', imageLayerId(fakeDigest))));
    assert.deepEqual(layerDirs('data').filter((n) => n.startsWith('.tmp-')), []);
  });

  it('refuses a manifest that is not the digest asked for', async () => {
    const digest = fakeImage(fake, 'lie/manifest', '1', makeTar([{ name: 'b', data: 'b' }]));
    const other = sha256('not the manifest');
    fake.manifest('lie/manifest', other, { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: {}, layers: [] }, 'application/vnd.oci.image.manifest.v1+json');
    await assert.rejects(driver.pullImage(`${fake.host}/lie/manifest@${other}`), /hashes to/);
    assert.ok(digest);
  });

  it('refuses a layer that reaches outside its directory, and nothing is written outside', async () => {
    const outside = join(work, 'outside');
    rmSync(outside, { recursive: true, force: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'victim'), 'untouched\n');
    const up = '../'.repeat(20);
    const layer = makeTar([
      { name: `${outside}/absolute`, data: 'x' },
      { name: `${up}${outside.slice(1)}/dotdot`, data: 'x' },
      { name: 'esc', type: 'symlink', linkname: outside },
      { name: 'esc/through-symlink', data: 'x' },
      { name: 'rel', type: 'symlink', linkname: `${up}${outside.slice(1)}` },
      { name: 'rel/through-relative', data: 'x' },
      { name: 'hard', type: 'hardlink', linkname: `${outside}/victim` },
      { name: 'hard', data: 'overwritten\n' },
      { name: 'null', type: 'chardev', devmajor: 1, devminor: 3 },
      { name: 'suid', data: '#!/bin/sh\n', mode: 0o4755 },
    ]);
    const before = layerDirs('data');
    fakeImage(fake, 'evil/escape', '1', layer);
    // tar ran (confined) and refused what it could not do inside the layer: the '..' name, the device.
    await assert.rejects(driver.pullImage(`${fake.host}/evil/escape:1`), /could not be unpacked safely: .*tar failed \(exit 2\)/);
    assert.deepEqual(readdirSync(outside), ['victim']);
    assert.equal(readFileSync(join(outside, 'victim'), 'utf8'), 'untouched\n');
    assert.equal(statSync(join(outside, 'victim')).nlink, 1);
    assert.deepEqual(layerDirs('data'), before, 'no layer, no temp dir left');
  });

  it('picks linux/amd64 from an index', async () => {
    const arm = fakeImage(fake, 'multi/arch', 'arm', makeTar([{ name: 'arch', data: 'arm64\n' }]));
    const amd = fakeImage(fake, 'multi/arch', 'amd', makeTar([{ name: 'arch', data: 'amd64\n' }]));
    const index = {
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: arm, size: 1, platform: { os: 'linux', architecture: 'arm64' } },
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: amd, size: 1, platform: { os: 'linux', architecture: 'amd64' } },
      ],
    };
    fake.manifest('multi/arch', 'latest', index, 'application/vnd.oci.image.index.v1+json');
    const img = await driver.pullImage(`${fake.host}/multi/arch`);
    assert.equal(img.digest, amd);
    assert.equal(readFileSync(join(work, 'data/layers', img.layers[0]!, 'arch'), 'utf8'), 'amd64\n');
  });

  it('concurrent pulls of one layer fetch it once', async () => {
    fakeImage(fake, 'busy/layer', '1', makeTar([{ name: 'big', data: Buffer.alloc(4 * MiB, 7) }]));
    fake.log.length = 0;
    const pulls = await Promise.all([1, 2, 3].map(() => driver.pullImage(`${fake.host}/busy/layer:1`)));
    assert.deepEqual(pulls[1]!.layers, pulls[0]!.layers);
    const layerGets = fake.log.filter((l) => l.includes('/blobs/') && !l.includes(sha256(JSON.stringify({}))));
    // One config fetch per pull at most, and the layer once.
    const gets = new Map<string, number>();
    for (const l of layerGets) gets.set(l, (gets.get(l) ?? 0) + 1);
    const layerUrl = `GET /v2/busy/layer/blobs/${pulls[0]!.layers[0]!.replace('oci-sha256-', 'sha256:')}`;
    assert.equal(gets.get(layerUrl), 1, fake.log.join('\n'));
  });

  it('unpacks zstd layers', async () => {
    const digest = fakeImage(fake, 'packed/zstd', '1', makeTar([{ name: 'z', data: 'zstd\n' }]), { zstd: true });
    const img = await driver.pullImage(`${fake.host}/packed/zstd:1`);
    assert.equal(img.digest, digest);
    assert.equal(readFileSync(join(work, 'data/layers', img.layers[0]!, 'z'), 'utf8'), 'zstd\n');
  });
});

describe('bounds', () => {
  const small = (): { pull: (ref: string, signal?: AbortSignal) => Promise<unknown>; dir: string } => {
    const dir = join(work, `bounded-${Math.random().toString(36).slice(2)}`);
    const client = new RegistryClient({ insecure: ['127.0.0.1'], idleTimeoutMs: 500 });
    const layers = new ImageLayers(new DataPaths(dir), quiet, { maxLayerBytes: 2 * MiB, maxUnpackedBytes: 1 * MiB });
    return { pull: (ref, signal) => pullImage(client, layers, 'docker.io', ref, { signal }), dir };
  };
  const leftovers = (dir: string): string[] => (existsSync(join(dir, 'layers')) ? readdirSync(join(dir, 'layers')).filter((n) => n !== '.configs') : []);

  it('refuses a layer that unpacks past the bound (a gzip bomb) and keeps nothing', async () => {
    fakeImage(fake, 'bomb/zeros', '1', makeTar([{ name: 'zeros', data: Buffer.alloc(8 * MiB) }]));
    const { pull, dir } = small();
    await assert.rejects(pull(`${fake.host}/bomb/zeros:1`), /unpacks to more than 1048576 bytes/);
    assert.deepEqual(leftovers(dir), []);
  });

  it('refuses a layer whose manifest size is past the bound, without fetching it', async () => {
    const big = makeTar([{ name: 'random', data: randomBytes(3 * MiB) }]);
    const digest = fakeImage(fake, 'big/layer', '1', big);
    fake.log.length = 0;
    const { pull } = small();
    await assert.rejects(pull(`${fake.host}/big/layer:1`), /at most 2097152/);
    assert.equal(fake.log.filter((l) => l.includes('/blobs/') && !l.includes(digest)).length, 1, 'only the config');
  });

  it('gives up on a registry that stalls mid-blob, and on an abort, leaving nothing', async () => {
    fakeImage(fake, 'slow/layer', '1', makeTar([{ name: 's', data: randomBytes(64 * 1024) }]));
    const { pull, dir } = small();
    const layerDigest = await layerOf(`${fake.host}/slow/layer:1`);
    fake.stalled.add(layerDigest);
    const started = Date.now();
    await assert.rejects(pull(`${fake.host}/slow/layer:1`), /timeout|did not answer|terminated|closed/i);
    assert.ok(Date.now() - started < 5000);
    assert.deepEqual(leftovers(dir), []);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('pull cancelled')), 100);
    await assert.rejects(pull(`${fake.host}/slow/layer:1`, ctl.signal), /pull cancelled/);
    assert.deepEqual(leftovers(dir), []);
    fake.stalled.delete(layerDigest);
  });
});

/** The digest of the first layer of a fake registry's image. */
async function layerOf(ref: string): Promise<string> {
  const [host, rest] = [ref.slice(0, ref.indexOf('/')), ref.slice(ref.indexOf('/') + 1)];
  const [repo, tag] = rest.split(':');
  const res = await fetch(`http://${host}/v2/${repo}/manifests/${tag}`);
  return ((await res.json()) as { layers: { digest: string }[] }).layers[0]!.digest;
}

