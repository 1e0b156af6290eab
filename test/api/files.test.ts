import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import { toFile } from '@runloop/api-client';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let box: Devbox;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-files-'));
const hostMarker = path.join(tmp, 'host-marker.txt');

before(async () => {
  server = await startTestServer();
  box = await server.sdk().devbox.create({ name: 'files-box' });
  fs.writeFileSync(hostMarker, 'host secret');
});
after(async () => {
  await box?.shutdown().catch(() => undefined);
  await server?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function sh(cmd: string): Promise<string> {
  const r = await box.cmd.exec(cmd);
  assert.equal(r.exitCode, 0, `${cmd} failed: ${await r.stderr()}`);
  return (await r.stdout()).trim();
}

const api = () => server.client({ maxRetries: 0 });
const read = (p: string) => api().devboxes.readFileContents(box.id, { file_path: p });
const write = (p: string, contents: string) => api().devboxes.writeFileContents(box.id, { file_path: p, contents });

async function downloadBytes(p: string): Promise<Buffer> {
  const res = await api().devboxes.downloadFile(box.id, { path: p });
  return Buffer.from(await res.arrayBuffer());
}

async function status(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { status: number; error?: { message?: string } };
    return { status: e.status, message: e.error?.message ?? '' };
  }
  assert.fail('expected an error');
}

/** The SDK's binary Response body: a Node stream on its HTTP/2 transport, a web stream on fetch. */
function bodyStream(res: { body: unknown }): Readable {
  const body = res.body as unknown;
  return body instanceof Readable ? body : Readable.fromWeb(body as never);
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(fs.createReadStream(file), h);
  return h.digest('hex');
}

describe('upload and download', () => {
  // Six times the JSON body limit: uploads and downloads stream.
  test('a 64 MiB random file goes up and comes back with the same sha256', async () => {
    const src = path.join(tmp, 'random-64m.bin');
    await pipeline(
      Readable.from(
        (function* () {
          for (let i = 0; i < 64; i++) yield randomBytes(1024 * 1024);
        })(),
      ),
      fs.createWriteStream(src),
    );
    const want = await sha256File(src);
    const r = await api().devboxes.uploadFile(box.id, { path: 'big/random.bin', file: fs.createReadStream(src) });
    assert.deepEqual(r, {});
    assert.equal(await sh('stat -c %s big/random.bin'), String(64 * 1024 * 1024));
    assert.equal(await sh('sha256sum big/random.bin | cut -d" " -f1'), want);

    const res = await api().devboxes.downloadFile(box.id, { path: 'big/random.bin' });
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    const h = createHash('sha256');
    await pipeline(bodyStream(res), h);
    assert.equal(h.digest('hex'), want);
    await sh('rm big/random.bin');
    fs.rmSync(src);
  });

  test('binary bytes survive both ways', async () => {
    const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 256));
    await api().devboxes.uploadFile(box.id, { path: 'bin/all-bytes', file: await toFile(bytes, 'all-bytes') });
    assert.deepEqual(await downloadBytes('bin/all-bytes'), bytes);
    assert.equal(await sh('od -An -tx1 -N4 bin/all-bytes | tr -d " "'), '00070e15');
  });

  test('an empty file', async () => {
    await api().devboxes.uploadFile(box.id, { path: 'empty', file: await toFile(Buffer.alloc(0), 'empty') });
    assert.equal((await downloadBytes('empty')).length, 0);
    assert.equal(await read('empty'), '');
  });

  test('the file part may come before the path', async () => {
    const form = new FormData();
    form.append('file', new Blob(['file first']), 'x.txt');
    form.append('path', 'order/late-path.txt');
    const res = await fetch(`${server.url}/v1/devboxes/${box.id}/upload_file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      body: form,
    });
    assert.equal(res.status, 200);
    assert.equal(await read('order/late-path.txt'), 'file first');
    assert.equal(await sh('ls -A ~ | grep -c devboxd-upload || true'), '0');
  });

  test('uploads land owned by the devbox user, parents included', async () => {
    await api().devboxes.uploadFile(box.id, { path: 'deep/er/owned.txt', file: await toFile(Buffer.from('x'), 'owned.txt') });
    assert.equal(await sh('stat -c %U deep deep/er deep/er/owned.txt | sort -u'), 'user');
    await write('/tmp/owned-too.txt', 'y');
    assert.equal(await sh('stat -c %U /tmp/owned-too.txt'), 'user');
  });

  test('a client that goes away mid-upload stops the box process', async () => {
    const ctl = new AbortController();
    const boundary = 'devboxd-test-boundary';
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(
          Buffer.from(
            `--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\nhalf.bin\r\n` +
              `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\n\r\n`,
          ),
        );
      },
      async pull(c) {
        if (sent >= 8 * 1024 * 1024) {
          await new Promise((r) => setTimeout(r, 50));
          if (!ctl.signal.aborted) ctl.abort();
          return;
        }
        sent += 1024 * 1024;
        c.enqueue(randomBytes(1024 * 1024));
      },
    });
    const res = fetch(`${server.url}/v1/devboxes/${box.id}/upload_file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      signal: ctl.signal,
      duplex: 'half',
    } as RequestInit);
    await assert.rejects(res);
    let left = '';
    for (let i = 0; i < 50; i++) {
      left = await sh('pgrep -x cat || true');
      if (left === '') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(left, '');
  });

  test('a client that goes away mid-download stops the box process', async () => {
    await sh('head -c 300M /dev/zero > zeros.bin');
    const ctl = new AbortController();
    const res = await api().devboxes.downloadFile(box.id, { path: 'zeros.bin' }, { signal: ctl.signal });
    const body = bodyStream(res);
    await new Promise((resolve) => body.once('data', resolve));
    ctl.abort();
    body.destroy();
    let left = '';
    for (let i = 0; i < 50; i++) {
      left = await sh('pgrep -x cat || true');
      if (left === '') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(left, '');
    await sh('rm zeros.bin');
  });
});

describe('file contents', () => {
  test('write then read text, relative to home or absolute', async () => {
    const r = await write('notes/hello.txt', 'héllo wörld\n');
    assert.equal(r.exit_status, 0);
    assert.equal(r.devbox_id, box.id);
    assert.equal(await read('notes/hello.txt'), 'héllo wörld\n');
    assert.equal(await read('/home/user/notes/hello.txt'), 'héllo wörld\n');
    assert.equal(await read('./notes/../notes/hello.txt'), 'héllo wörld\n');
    await write('/tmp/abs.txt', 'absolute');
    assert.equal(await sh('cat /tmp/abs.txt'), 'absolute');
    await write('notes/hello.txt', 'short');
    assert.equal(await read('notes/hello.txt'), 'short');
  });

  test('missing → 404, directory → 400, empty path → 400, denied → 403', async () => {
    assert.deepEqual(await status(read('no/such/file')), { status: 404, message: 'file not found: no/such/file' });
    assert.equal((await status(api().devboxes.downloadFile(box.id, { path: 'nope.bin' }))).status, 404);
    assert.equal((await status(read('/etc'))).status, 400);
    assert.equal((await status(api().devboxes.downloadFile(box.id, { path: '/tmp' }))).status, 400);
    assert.equal((await status(write('/tmp', 'x'))).status, 400);
    assert.equal((await status(read(''))).status, 400);
    assert.equal((await status(api().devboxes.downloadFile(box.id, { path: '' }))).status, 400);
    const denied = await status(write('/etc/passwd', 'x'));
    assert.equal(denied.status, 403);
    assert.match(denied.message, /permission denied/);
    assert.equal((await status(write('/usr/local/forbidden/new.txt', 'x'))).status, 403);
    await write('plain.txt', 'a file');
    assert.equal((await status(write('plain.txt/child', 'x'))).status, 400);
    assert.equal((await status(write('plain.txt/deeper/child', 'x'))).status, 400);
    assert.equal((await status(read('plain.txt/child'))).status, 404);
    assert.equal((await status(read('/root/secret'))).status, 403);
  });

  test('an unknown devbox is 404', async () => {
    assert.equal((await status(api().devboxes.readFileContents('dbx_nope', { file_path: 'x' }))).status, 404);
  });
});

describe('paths never leave the box', () => {
  test('/etc/hostname and ../../etc/hostname are the box files', async () => {
    assert.equal((await read('/etc/hostname')).trim(), 'files-box');
    assert.equal((await read('../../etc/hostname')).trim(), 'files-box');
    assert.equal((await read('../../../../../../etc/hostname')).trim(), 'files-box');
  });

  test('/etc/shadow and ../../etc/shadow are the box shadow file, unreadable to the box user', async () => {
    assert.equal((await status(read('/etc/shadow'))).status, 403);
    assert.equal((await status(read('../../etc/shadow'))).status, 403);
  });

  test('a host file is invisible, by path or through symlinks', async () => {
    assert.equal(fs.readFileSync(hostMarker, 'utf8'), 'host secret');
    assert.equal((await status(read(hostMarker))).status, 404);
    assert.equal((await status(api().devboxes.downloadFile(box.id, { path: hostMarker }))).status, 404);
    await sh(`ln -sfn ${hostMarker} marker-link && ln -sfn / rootlink && ln -sfn ${tmp} tmplink`);
    assert.equal((await status(read('marker-link'))).status, 404);
    assert.equal((await read('rootlink/etc/hostname')).trim(), 'files-box');
    assert.equal((await status(read(`rootlink${hostMarker}`))).status, 404);
  });

  test('writes through symlinks to host paths stay in the box', async () => {
    await api().devboxes.uploadFile(box.id, { path: `rootlink${tmp}/uploaded.txt`, file: await toFile(Buffer.from('up'), 'u') });
    await write('tmplink/planted.txt', 'planted');
    assert.equal(fs.existsSync(path.join(tmp, 'planted.txt')), false);
    assert.equal(fs.existsSync(path.join(tmp, 'uploaded.txt')), false);
    assert.equal(await sh(`cat ${tmp}/planted.txt ${tmp}/uploaded.txt`), 'plantedup');
    await write('marker-link', 'overwritten?');
    assert.equal(fs.readFileSync(hostMarker, 'utf8'), 'host secret');
  });
});
