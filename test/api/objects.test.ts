import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import { runInBox, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Storage objects end to end: the SDK's StorageObject helpers over h2c and HTTP/1.1, presigned URLs fetched
 * as the SDK does (global fetch, no key) and over h2, refused when altered, expired or deleted, a 1 GiB
 * object streamed both ways while the server's memory stays flat, and objects mounted into boxes.
 */
let server: TestServer;
let api: Runloop;
before(async () => {
  server = await startTestServer({ DEVBOXD_OBJECT_MOUNT_MAX_BYTES: String(64 * 1024 * 1024) });
  api = server.client();
});
after(async () => server?.stop());

/** Creates a box and waits until it runs or ended (createAndAwaitRunning throws on a failed box). */
async function settled(params: Runloop.DevboxCreateParams) {
  const { id } = await api.devboxes.create(params);
  for (;;) {
    const box = await api.devboxes.retrieve(id);
    if (!['provisioning', 'initializing'].includes(box.status)) return box;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-objects-'));

for (const h2 of [true, false]) {
  describe(`StorageObject helpers over ${h2 ? 'h2c' : 'HTTP/1.1'}`, () => {
    test('upload from text, buffer and file; download as text and bytes; info and delete', async () => {
      const sdk = server.sdk({ http2: h2 });
      const text = await sdk.storageObject.uploadFromText('héllo from text', 'text.txt', { metadata: { via: 'text' } });
      assert.equal(await text.downloadAsText(), 'héllo from text');
      const info = await text.getInfo();
      assert.deepEqual(
        [info.state, info.size_bytes, info.content_type, info.metadata],
        ['READ_ONLY', Buffer.byteLength('héllo from text'), 'text', { via: 'text' }],
      );

      const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
      const buf = await sdk.storageObject.uploadFromBuffer(bytes, 'bytes.bin', 'binary');
      assert.ok((await buf.downloadAsBuffer()).equals(bytes));

      const dir = tmp();
      const file = path.join(dir, 'notes.md');
      fs.writeFileSync(file, '# notes\n');
      const fromFile = await sdk.storageObject.uploadFromFile(file, 'notes.md');
      assert.equal((await fromFile.getInfo()).content_type, 'text');
      assert.equal(await fromFile.downloadAsText(), '# notes\n');
      fs.rmSync(dir, { recursive: true });

      await buf.delete();
      await assert.rejects(buf.getInfo(), (err: { status?: number }) => err.status === 404);
      await assert.rejects(buf.downloadAsBuffer(), (err: { status?: number }) => err.status === 404);
    });
  });
}

describe('presigned URLs over a real socket', () => {
  test('a download URL serves Range requests over HTTP/1.1 and h2, and is refused once altered, expired or its object deleted', async () => {
    const obj = await server.sdk().storageObject.uploadFromText('0123456789', 'digits.txt');
    const { download_url: url } = await obj.getDownloadUrl(2);
    let res = await fetch(url, { headers: { range: 'bytes=3-6' } });
    assert.deepEqual([res.status, await res.text(), res.headers.get('content-range')], [206, '3456', 'bytes 3-6/10']);

    // The same URL over h2c (prior knowledge), as a client on the SDK's own transport would fetch it.
    const u = new URL(url);
    const session = http2.connect(u.origin);
    const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = session.request({ ':path': `${u.pathname}${u.search}`, range: 'bytes=-2' });
      let status = 0;
      let text = '';
      req.on('response', (h) => (status = Number(h[':status'])));
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => resolve({ status, text }));
      req.on('error', reject);
      req.end();
    });
    session.close();
    assert.deepEqual(body, { status: 206, text: '89' });

    const altered = url.replace(/signature=([\w-])/, (_, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`);
    res = await fetch(altered);
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { message: string }).message, /altered/);

    await new Promise((r) => setTimeout(r, 3100));
    res = await fetch(url);
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { message: string }).message, /expired/);

    const { download_url: fresh } = await obj.getDownloadUrl();
    assert.equal((await fetch(fresh)).status, 200);
    await obj.delete();
    res = await fetch(fresh);
    assert.equal(res.status, 404);
    assert.match(((await res.json()) as { message: string }).message, /not found/);
  });

  test('an upload URL takes its PUT over h2c too', async () => {
    const o = await api.objects.create({ name: 'h2.txt', content_type: 'text' });
    const u = new URL(o.upload_url!);
    const session = http2.connect(u.origin);
    const status = await new Promise<number>((resolve, reject) => {
      const req = session.request({ ':method': 'PUT', ':path': `${u.pathname}${u.search}` });
      req.on('response', (h) => resolve(Number(h[':status'])));
      req.on('error', reject);
      req.resume();
      req.end('sent over h2');
    });
    session.close();
    assert.equal(status, 200);
    await api.objects.complete(o.id);
    assert.equal(await server.sdk().storageObject.fromId(o.id).downloadAsText(), 'sent over h2');
  });

  test('a 320 MiB object streams up and down while the server’s resident memory stays flat', async () => {
    // Past the bound below (2.5 times, 1.7 on S3): an object held whole, either way, would be past it.
    const size = 320 * 1024 ** 2;
    const chunk = 1024 * 1024;
    const rssMiB = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${server.pid()}/status`, 'utf8'))![1]) / 1024;
    const before = rssMiB();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB())), 100);
    try {
      const created = await api.objects.create({ name: 'big.bin', content_type: 'binary' });
      const sent = createHash('sha256');
      // Generated as it is sent: the test holds one chunk at a time, never the object.
      async function* generate() {
        for (let i = 0; i < size / chunk; i++) {
          const b = Buffer.alloc(chunk, i % 256);
          b.writeUInt32BE(i, 0);
          sent.update(b);
          yield b;
        }
      }
      const put = await fetch(created.upload_url!, {
        method: 'PUT',
        body: Readable.toWeb(Readable.from(generate())) as ReadableStream,
        duplex: 'half',
      } as RequestInit);
      assert.equal(put.status, 200, await put.text());
      const done = await api.objects.complete(created.id);
      assert.equal(done.size_bytes, size);
      const { download_url } = await api.objects.download(created.id);
      const got = await fetch(download_url);
      assert.equal(got.headers.get('content-length'), String(size));
      const received = createHash('sha256');
      let n = 0;
      for await (const part of got.body as unknown as AsyncIterable<Uint8Array>) {
        received.update(part);
        n += part.length;
      }
      assert.equal(n, size);
      assert.equal(received.digest('hex'), sent.digest('hex'));
      await api.objects.delete(created.id);
    } finally {
      clearInterval(sampler);
    }
    const grew = peak - before;
    console.log(`server RSS: ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB while moving 320 MiB each way (+${grew.toFixed(0)} MiB)`);
    // On S3 the store holds multipart parts in flight and the AWS SDK its own buffers: more, but still flat.
    const bound = process.env.DEVBOXD_TEST_BLOB_BACKEND === 's3' ? 192 : 128;
    assert.ok(grew < bound, `the server's RSS grew by ${grew.toFixed(0)} MiB while moving 320 MiB (bound ${bound} MiB)`);
  });
});

describe('size cap', () => {
  test('an upload past DEVBOXD_OBJECT_MAX_BYTES gets 413 as it streams (no length given too) and keeps nothing', async () => {
    const small = await startTestServer({ DEVBOXD_OBJECT_MAX_BYTES: String(1024 * 1024) });
    try {
      const c = small.client();
      const o = await c.objects.create({ name: 'capped.bin', content_type: 'binary' });
      async function* chunks() {
        for (let i = 0; i < 5; i++) yield Buffer.alloc(512 * 1024, i);
      }
      let res = await fetch(o.upload_url!, { method: 'PUT', body: Readable.toWeb(Readable.from(chunks())) as ReadableStream, duplex: 'half' } as RequestInit);
      assert.equal(res.status, 413);
      assert.match(((await res.json()) as { message: string }).message, /larger than 1048576 bytes/);
      res = await fetch(o.upload_url!, { method: 'PUT', body: Buffer.alloc(2 * 1024 * 1024) });
      assert.equal(res.status, 413);
      await assert.rejects(c.objects.complete(o.id), (err: { status?: number }) => err.status === 400);
      assert.deepEqual(Object.keys(await small.blobs('objects/')), []);
    } finally {
      await small.stop();
    }
  });
});

describe('object mounts', () => {
  test('a tar.gz object (uploadFromDir) appears unpacked, a text object as a file, a file_mount too, before launch commands', async () => {
    const dir = tmp();
    fs.mkdirSync(path.join(dir, 'src/pkg'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'README'), 'top\n');
    fs.writeFileSync(path.join(dir, 'src/pkg/mod.py'), 'print("hi")\n');
    fs.writeFileSync(path.join(dir, 'run.sh'), '#!/bin/sh\necho ran\n', { mode: 0o755 });
    fs.symlinkSync('README', path.join(dir, 'link'));
    const sdk = server.sdk();
    const archive = await sdk.storageObject.uploadFromDir(dir, { name: 'project' });
    assert.equal((await archive.getInfo()).content_type, 'tgz');
    fs.rmSync(dir, { recursive: true });
    const note = await sdk.storageObject.uploadFromText('mounted text', 'note.txt');

    const box = await api.devboxes.createAndAwaitRunning({
      mounts: [
        { type: 'object_mount', object_id: archive.id, object_path: '/home/user/project' },
        { type: 'object_mount', object_id: note.id, object_path: '/home/user/data/note.txt' },
        { type: 'file_mount', target: '/home/user/inline.txt', content: 'inline' },
      ],
      launch_parameters: { launch_commands: ['cat /home/user/project/README > /home/user/seen-at-launch'] },
    });
    assert.equal(box.status, 'running');
    const r = await runInBox(
      api,
      box.id,
      'cd ~/project && cat README src/pkg/mod.py && ./run.sh && readlink link && stat -c "%U %a" README run.sh && cat ~/data/note.txt && echo && cat ~/inline.txt && echo && cat ~/seen-at-launch',
    );
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'top\nprint("hi")\nran\nREADME\nuser 644\nuser 755\nmounted text\ninline\ntop\n');
    await api.devboxes.shutdown(box.id);
  });

  test('a zip bomb fails the box with a reason that names the bound; an archive that climbs out with .. too', async () => {
    const dir = tmp();
    // 200 MiB of zeros compresses to a few hundred KiB; the server unpacks at most 64 MiB (set above).
    execFileSync('sh', ['-c', 'head -c 209715200 /dev/zero > zero && zip -q bomb.zip zero && rm zero'], { cwd: dir });
    const bomb = await server.sdk().storageObject.uploadFromFile(path.join(dir, 'bomb.zip'), 'bomb.zip');
    let box = await settled({ mounts: [{ type: 'object_mount', object_id: bomb.id, object_path: '/home/user/bomb' }] });
    assert.equal(box.status, 'failure');
    assert.equal(box.failure_reason, 'execution_failed');
    assert.match(
      box.state_transitions.at(-1)?.failure_reason ?? '',
      new RegExp(`object mount ${bomb.id} at /home/user/bomb failed: the archive unpacks to more than 67108864 bytes`),
    );

    execFileSync('sh', ['-c', 'mkdir -p a && echo x > evil && tar -cPf climb.tar -C a ../evil'], { cwd: dir });
    const climb = await server.sdk().storageObject.uploadFromFile(path.join(dir, 'climb.tar'), 'climb.tar');
    box = await settled({ mounts: [{ type: 'object_mount', object_id: climb.id, object_path: '/home/user/climb' }] });
    assert.equal(box.status, 'failure');
    assert.match(box.state_transitions.at(-1)?.failure_reason ?? '', /points outside \/home\/user\/climb/);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('expiry across a restart', () => {
  test('an object with ttl_ms is refused from its time on and its bytes go, though the server was killed meanwhile', async () => {
    const o = await api.objects.create({ name: 'ttl.bin', content_type: 'binary', ttl_ms: 8000 });
    assert.equal((await fetch(o.upload_url!, { method: 'PUT', body: 'short-lived' })).status, 200);
    await api.objects.complete(o.id);
    // Wherever the server keeps blobs (files or S3): the object's keys.
    const keys = async () => Object.keys(await server.blobs('objects/')).filter((k) => k.includes(`/${o.id}/`));
    assert.equal((await keys()).length, 1, 'the bytes are in the blob store');
    await server.restart();
    const after = server.client();
    // A restart under load may take longer than the ttl: the object is only known alive if it is not due yet.
    if (Date.now() < o.delete_after_time_ms! - 500) assert.equal((await after.objects.retrieve(o.id)).state, 'READ_ONLY');
    await new Promise((r) => setTimeout(r, Math.max(0, o.delete_after_time_ms! - Date.now()) + 100));
    await assert.rejects(after.objects.retrieve(o.id), (err: { status?: number }) => err.status === 404);
    for (let i = 0; i < 100 && (await keys()).length; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await keys(), [], 'the expiry job of the restarted server removed the bytes');
  });
});
