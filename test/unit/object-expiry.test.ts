import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import { FsBlobStore } from '../../src/platform/blob/fs-blob-store.js';
import type { BlobStore } from '../../src/platform/blob/types.js';
import { JobRunner } from '../../src/platform/jobs/job-runner.js';
import { openStore } from '../../src/resources/core-store.js';
import type { Store } from '../../src/platform/store/types.js';
import { EXPIRE_JOB, ObjectService } from '../../src/resources/objects/object-service.js';
import { Presigner } from '../../src/resources/objects/presign.js';
import { OBJECTS_SCHEMA } from '../../src/resources/objects/schema.js';

// The expiry job is never given up (the wiring of deps.ts: `untilDone`): a blob store that refuses deletes
// for longer than a job's attempts last does not leave the expired object's bytes stored for ever.
const log = createLogger('silent');
const accountId = 'acc_expiry';

describe('object expiry whose removal keeps failing', () => {
  let dir: string;
  let store: Store;
  let jobs: JobRunner;
  let objects: ObjectService;
  let blobs: BlobStore;
  let refusals = 0;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'object-expiry-'));
    store = await openStore({ dataDir: dir, modules: [OBJECTS_SCHEMA] });
    await store.accounts.createAccount({ id: accountId, name: 'expiry', createTimeMs: Date.now() });
    const fsBlobs = await FsBlobStore.open(path.join(dir, 'blobs'));
    // The blob store is down for deletes for the first `refusals` calls (S3 unreachable, a full disk's EIO...).
    blobs = Object.assign(Object.create(fsBlobs) as BlobStore, {
      delete: async (key: string) => {
        if (refusals > 0) {
          refusals--;
          throw new Error('the blob store is down');
        }
        return fsBlobs.delete(key);
      },
    });
    jobs = new JobRunner(store.jobs, 'n1', { [EXPIRE_JOB]: (job) => objects.expire(job.subjectId) }, log, {
      maxAttempts: 3,
      retryBaseMs: 5,
      background: [EXPIRE_JOB],
      untilDone: [EXPIRE_JOB],
    });
    const config = {
      maxBytes: 1e6,
      publicUrl: null,
      accountMaxObjects: 100,
      accountMaxBytes: 1e7,
      uploadsMax: 4,
      uploadIdleMs: 5000,
      mountMaxBytes: 1e6,
      mountMaxEntries: 10,
      mountTimeoutMs: 1000,
    };
    objects = new ObjectService(store, blobs, new Presigner(randomBytes(32)), () => jobs, config, log);
  });
  after(async () => {
    jobs.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('retries past maxAttempts until the object and its bytes are gone', async () => {
    // The TTL leaves the upload time to finish on a loaded machine (an expiry before it would fail the PUT, not
    // the expiry); the refusals start once the bytes are in, so every one of them meets the expiry's deletes.
    const o = await objects.create(accountId, { name: 'brief.txt', contentType: 'text', ttlMs: 1500 });
    await objects.receive(o, Readable.from([Buffer.from('short-lived')]), 11);
    refusals = 6;
    assert.equal((await blobs.list(`objects/${accountId}/${o.id}/`)).length, 1);
    const end = Date.now() + 10_000;
    while ((await store.db.query('SELECT 1 FROM objects WHERE id = ?', [o.id])).rows.length > 0 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(refusals, 0, 'every refusal was met');
    assert.equal((await store.db.query('SELECT 1 FROM objects WHERE id = ?', [o.id])).rows.length, 0, 'the record is gone');
    assert.deepEqual(await blobs.list(`objects/${accountId}/${o.id}/`), [], 'its bytes are gone');
    const { rows } = await store.db.query<{ state: string; attempts: number }>('SELECT state, attempts FROM jobs WHERE subject_id = ?', [o.id]);
    assert.equal(rows[0]!.state, 'succeeded');
    assert.ok(rows[0]!.attempts > 3, `attempts: ${rows[0]!.attempts}`);
  });
});
