import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { loadBlobConfig, type S3Config } from '../../src/platform/blob/config.js';
import { FsBlobStore } from '../../src/platform/blob/fs-blob-store.js';
import { S3BlobStore } from '../../src/platform/blob/s3-blob-store.js';
import type { BlobStore } from '../../src/platform/blob/types.js';
import { DomainError } from '../../src/platform/errors.js';
import { startTestS3, type TestS3 } from '../helpers/s3.js';

/**
 * The BlobStore contract (issue 14, "Blob store"): the same cases against the local-files store and the S3
 * store (on s3rver, started here on 127.0.0.1). What a caller relies on: a put is whole or absent, a get
 * streams the bytes or a range of them, unknown keys are 404s, and nothing is ever held whole in memory.
 */
const MiB = 1024 * 1024;

let s3: TestS3;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-blobs-'));
before(async () => (s3 = await startTestS3()));
after(async () => {
  await s3?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const backends: Record<string, () => Promise<BlobStore>> = {
  fs: () => FsBlobStore.open(fs.mkdtempSync(path.join(tmp, 'fs-'))),
  s3: async () => S3BlobStore.open(loadBlobConfig(s3.env()) as S3Config),
};

/** `count` chunks of `chunk` bytes, chunk i filled with byte (seed + i) % 251: content that tells parts apart. */
async function* bytes(count: number, chunk = MiB, seed = 0, opts: { failAt?: number; onChunk?: (i: number) => void } = {}) {
  for (let i = 0; i < count; i++) {
    if (i === opts.failAt) throw new Error('the body broke');
    opts.onChunk?.(i);
    yield Buffer.alloc(chunk, (seed + i) % 251);
    // Real bodies arrive over time; this also lets an abort land between chunks.
    await new Promise((r) => setImmediate(r));
  }
}

async function digest(body: AsyncIterable<Uint8Array> | Readable): Promise<{ size: number; sha: string }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const c of body as AsyncIterable<Buffer>) {
    h.update(c);
    size += c.length;
  }
  return { size, sha: h.digest('hex') };
}

async function text(body: Readable): Promise<string> {
  return ((await body.toArray()) as Buffer[]).map((b) => b.toString()).join('');
}

const code = (want: string) => (err: unknown) => err instanceof DomainError && err.code === want;

for (const [name, open] of Object.entries(backends)) {
  describe(`blob store contract: ${name}`, () => {
    let blobs: BlobStore;
    before(async () => (blobs = await open()));

    test('put, stat, get whole and by range, list by prefix, delete', async () => {
      const st = await blobs.put('a/b/one', Readable.from([Buffer.from('hello, '), Buffer.from('world')]));
      assert.equal(st.key, 'a/b/one');
      assert.equal(st.size, 12);
      assert.ok(Math.abs(st.modifiedMs - Date.now()) < 60_000, 'modified about now');
      assert.deepEqual(await blobs.stat('a/b/one'), st);
      assert.equal(await text(await blobs.get('a/b/one')), 'hello, world');
      assert.equal(await text(await blobs.get('a/b/one', { start: 7, end: 9 })), 'wor');
      assert.equal(await text(await blobs.get('a/b/one', { start: 7 })), 'world');
      assert.equal(await text(await blobs.get('a/b/one', { start: 10, end: 1000 })), 'ld', 'a range past the end is cut at the end');
      assert.equal(await text(await blobs.get('a/b/one', { start: 12 })), '', 'a range starting at the end is empty');
      await assert.rejects(blobs.get('a/b/one', { start: 5, end: 2 }), code('invalid_request'));

      await blobs.put('a/b/two', Readable.from([Buffer.from('2')]));
      await blobs.put('a/c', Readable.from([Buffer.from('33')]));
      await blobs.put('ab', Readable.from([]));
      assert.deepEqual(
        (await blobs.list('a/')).map((b) => [b.key, b.size]),
        [
          ['a/b/one', 12],
          ['a/b/two', 1],
          ['a/c', 2],
        ],
      );
      assert.deepEqual(
        (await blobs.list('a/b/t')).map((b) => b.key),
        ['a/b/two'],
      );
      assert.deepEqual(await blobs.list('nothing/'), []);
      assert.equal((await blobs.stat('ab'))?.size, 0, 'an empty blob is a blob');

      assert.equal(await blobs.delete('a/b/one'), true);
      assert.equal(await blobs.delete('a/b/one'), false);
      assert.equal(await blobs.stat('a/b/one'), undefined);
      await assert.rejects(blobs.get('a/b/one'), code('not_found'));
      await assert.rejects(blobs.get('never/was'), code('not_found'));
      assert.deepEqual(
        (await blobs.list('a/')).map((b) => b.key),
        ['a/b/two', 'a/c'],
      );
    });

    test('keys that are not path segments of safe characters are refused, not stored', async () => {
      for (const bad of ['', '/abs', 'a//b', '../up', 'a/../b', '.hidden', 'a/.tmp/x', 'sp ace', 'a/']) {
        await assert.rejects(blobs.put(bad, Readable.from([Buffer.from('x')])), code('invalid_request'), bad);
        await assert.rejects(blobs.get(bad), code('invalid_request'), bad);
      }
    });

    test('a put replaces the blob whole; a put whose body fails or is aborted midway leaves what was there', async () => {
      await blobs.put('r/key', bytes(3, MiB, 1));
      const before = await digest(await blobs.get('r/key'));
      // Small (one request) and large (past one S3 part: a multipart upload) bodies, failing and aborted.
      for (const chunks of [4, 24]) {
        await assert.rejects(blobs.put('r/key', bytes(chunks, MiB, 7, { failAt: chunks - 1 })), /the body broke/);
        const ac = new AbortController();
        await assert.rejects(blobs.put('r/key', bytes(chunks, MiB, 9, { onChunk: (i) => i === chunks - 2 && ac.abort() }), { signal: ac.signal }), {
          name: 'AbortError',
        });
        assert.deepEqual(await digest(await blobs.get('r/key')), before, `after a cut put of ${chunks} MiB the old blob is intact`);
        await assert.rejects(blobs.put('r/new', bytes(chunks, MiB, 7, { failAt: chunks - 1 })), /the body broke/);
        assert.equal(await blobs.stat('r/new'), undefined, 'a cut put of a new key leaves nothing');
      }
      assert.deepEqual(
        (await blobs.list('r/')).map((b) => b.key),
        ['r/key'],
      );
      const st = await blobs.put('r/key', bytes(10, MiB, 3));
      assert.equal(st.size, 10 * MiB);
      assert.deepEqual(await digest(await blobs.get('r/key')), await digest(bytes(10, MiB, 3)));
    });

    test('concurrent puts of one key end with one of them, whole', async () => {
      for (const chunks of [2, 12]) {
        const seeds = [10, 20, 30, 40];
        // Different lengths too: a mix of two would show in the size as well as the bytes.
        const wanted = await Promise.all(seeds.map((s, i) => digest(bytes(chunks + i, MiB, s))));
        await Promise.all(seeds.map((s, i) => blobs.put(`c/${chunks}`, bytes(chunks + i, MiB, s))));
        const got = await digest(await blobs.get(`c/${chunks}`));
        assert.ok(
          wanted.some((w) => w.sha === got.sha && w.size === got.size),
          `the blob is one of the puts (${got.size} bytes)`,
        );
        assert.equal((await blobs.stat(`c/${chunks}`))?.size, got.size);
      }
    });

    test('a large body streams through with flat memory, both ways', async () => {
      // Past the bound below, so a store that held it whole would fail.
      const SIZE_MIB = 160;
      const rss0 = process.memoryUsage().rss;
      let peak = rss0;
      const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      try {
        const st = await blobs.put('big/one', bytes(SIZE_MIB, MiB, 5));
        assert.equal(st.size, SIZE_MIB * MiB);
        const got = await digest(await blobs.get('big/one'));
        assert.deepEqual(got, await digest(bytes(SIZE_MIB, MiB, 5)));
      } finally {
        clearInterval(sample);
      }
      const growth = (peak - rss0) / MiB;
      assert.ok(growth < 96, `RSS grew by ${growth.toFixed(0)} MiB for a ${SIZE_MIB} MiB blob`);
      assert.equal(await blobs.delete('big/one'), true);
    });
  });
}
