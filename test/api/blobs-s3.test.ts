import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { serverBlobs, startTestS3, type TestS3 } from '../helpers/s3.js';
import { startTestServer } from '../helpers/server.js';

/**
 * A server told to keep its blobs in S3 checks the bucket before it starts anything: a bucket it cannot use
 * stops it at once with a message that says what is wrong (issue 14, "Blob store").
 */
let s3: TestS3;
before(async () => (s3 = await startTestS3()));
after(async () => s3?.stop());

async function refusedStart(env: Record<string, string>): Promise<string> {
  const err = await startTestServer(env).then(
    async (server) => {
      await server.stop();
      return undefined;
    },
    (e: Error) => e,
  );
  assert.ok(err, 'the server must not start');
  assert.match(err.message, /server exited with 1 before listening/);
  return err.message;
}

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

test('an unreachable endpoint, an unknown bucket or refused credentials stop the start, named', async () => {
  const down = await refusedStart({ ...s3.env(), DEVBOXD_S3_ENDPOINT: `http://127.0.0.1:${await closedPort()}` });
  assert.match(down, /devboxd: DEVBOXD_BLOB_BACKEND=s3: S3 bucket "devboxd-test" at http:\/\/127\.0\.0\.1:\d+: it is not reachable: .*ECONNREFUSED/);
  const missing = await refusedStart({ ...s3.env(), DEVBOXD_S3_BUCKET: 'no-such-bucket' });
  assert.match(missing, /S3 bucket "no-such-bucket" at .*: it does not exist/);
  // s3rver knows access key ids but does not check SigV4 signatures: an unknown key id is what it refuses.
  const denied = await refusedStart({ ...s3.env(), DEVBOXD_S3_ACCESS_KEY_ID: 'NOT-A-KEY' });
  assert.match(denied, /S3 bucket "devboxd-test" at .*: access denied: check DEVBOXD_S3_ACCESS_KEY_ID/);
  const config = await refusedStart({ DEVBOXD_BLOB_BACKEND: 's3' });
  assert.match(config, /devboxd: DEVBOXD_S3_BUCKET is required when DEVBOXD_BLOB_BACKEND=s3/);
});

test('a server on a good bucket starts, and its blobs are in the bucket under its prefix, not in its data dir', async () => {
  const env = s3.env('node-a');
  const server = await startTestServer(env);
  try {
    const api = server.client();
    const box = await api.devboxes.createAndAwaitRunning({ name: 'on-s3' });
    const r = await api.devboxes.executeAndAwaitCompletion(box.id, { command: 'echo stored in s3' });
    let stored: Record<string, number> = {};
    for (let i = 0; i < 200 && !Object.keys(stored).length; i++) {
      stored = await server.blobs(`executions/${box.id}/${r.execution_id}/`);
      if (!Object.keys(stored).length) await new Promise((res) => setTimeout(res, 50));
    }
    assert.deepEqual(stored, { 'stdout/0': 'stored in s3\n'.length });
    assert.deepEqual(
      Object.keys(await server.blobs('')).filter((k) => !k.startsWith('executions/')),
      [],
    );
    // The same keys looked up as files: nothing there.
    assert.deepEqual(await serverBlobs({}, server.apiDir, ''), {});
    const view = await api.devboxes.executions.retrieve(box.id, r.execution_id);
    assert.equal(view.stdout, 'stored in s3\n');
    await api.devboxes.shutdown(box.id);
  } finally {
    await server.stop();
  }
});
