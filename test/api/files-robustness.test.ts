import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { toFile } from '@runloop/api-client';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let box: Devbox;

before(async () => {
  server = await startTestServer({ DEVBOXD_UPLOAD_STALL_MS: '3000' });
  box = await server.sdk().devbox.create({ name: 'files-robust' });
});
after(async () => {
  await server?.stop();
});

const api = () => server.client({ maxRetries: 0 });
const read = (p: string) => api().devboxes.readFileContents(box.id, { file_path: p });
const write = (p: string, contents: string) => api().devboxes.writeFileContents(box.id, { file_path: p, contents });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sh(cmd: string, on: Devbox = box): Promise<string> {
  const r = await on.cmd.exec(cmd);
  assert.equal(r.exitCode, 0, `${cmd} failed: ${await r.stderr()}`);
  return (await r.stdout()).trim();
}

/** Names in `dir` that look like devboxd temporary files, once no writer is left in the box. */
async function temps(dir: string, on: Devbox = box): Promise<string> {
  for (let i = 0; i < 50 && (await sh('pgrep -x cat || true', on)) !== ''; i++) await sleep(100);
  return sh(`ls -A ${dir} | grep devboxd- || true`, on);
}

async function failure(p: Promise<unknown>): Promise<{ status: number; message: string; headers?: Headers }> {
  try {
    await p;
  } catch (err) {
    const e = err as { status: number; error?: { message?: string }; headers?: Headers };
    return { status: e.status, message: e.error?.message ?? '', headers: e.headers };
  }
  assert.fail('expected an error');
}

const BOUNDARY = 'robust-boundary';
const head = (name: string, filename?: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n\r\n`;

/** POSTs a raw body to upload_file over HTTP/1.1 and returns status and parsed JSON. */
async function rawUpload(body: string | Buffer, contentType = `multipart/form-data; boundary=${BOUNDARY}`, on: Devbox = box) {
  const res = await fetch(`${server.url}/v1/devboxes/${on.id}/upload_file`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': contentType },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  let json: { message?: string } = {};
  try {
    json = JSON.parse(text) as { message?: string };
  } catch {
    /* asserted below */
  }
  return { status: res.status, json, text, headers: res.headers };
}

/**
 * Streams an upload of `path`: 1 MiB chunks until `holdAfter` bytes, then waits for `release()` (or the
 * signal), then sends `tail` more bytes and ends the body properly.
 */
function streamingUpload(path: string, holdAfter: number, tail = 0, on: Devbox = box) {
  const ctl = new AbortController();
  let sent = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(Buffer.from(head('path') + `${path}\r\n` + head('file', 'f.bin')));
    },
    async pull(c) {
      if (sent === holdAfter) {
        held();
        await released;
      }
      if (sent >= holdAfter + tail) {
        c.enqueue(Buffer.from(`\r\n--${BOUNDARY}--\r\n`));
        c.close();
        return;
      }
      sent += 1024 * 1024;
      c.enqueue(randomBytes(1024 * 1024));
    },
  });
  const response = fetch(`${server.url}/v1/devboxes/${on.id}/upload_file`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body,
    signal: ctl.signal,
    duplex: 'half',
  } as RequestInit);
  response.catch(() => undefined);
  return { response, abort: () => ctl.abort(), release, holding };
}

describe('uploads are atomic', () => {
  test('a client that goes away mid-upload leaves the previous version and no temporary file', async () => {
    await write('atomic/doc.txt', 'v1');
    const up = streamingUpload('atomic/doc.txt', 8 * 1024 * 1024);
    await up.holding;
    await sleep(200);
    up.abort();
    await assert.rejects(up.response);
    assert.equal(await temps('atomic'), '');
    assert.equal(await read('atomic/doc.txt'), 'v1');
    // The client's choice, not a server fault: nothing about it is logged at error level (pino: 50).
    const errors = server
      .output()
      .split('\n')
      .filter((l) => l.includes('"level":50') && l.includes('atomic/doc.txt'));
    assert.deepEqual(errors, []);
  });

  test('a finished upload replaces the file whole; an existing file keeps its mode, a new one is 0644', async () => {
    await write('modes/secret', 'old');
    await sh('chmod 600 modes/secret');
    await api().devboxes.uploadFile(box.id, { path: 'modes/secret', file: await toFile(Buffer.from('new'), 's') });
    assert.equal(await read('modes/secret'), 'new');
    assert.equal(await sh('stat -c %a modes/secret'), '600');
    await write('modes/fresh', 'x');
    assert.equal(await sh('stat -c %a:%U modes/fresh'), '644:user');
    assert.equal(await temps('modes'), '');
  });

  test('writing through a symlink replaces its target and keeps the link', async () => {
    await write('links/target.txt', 'v1');
    await sh('ln -sfn target.txt links/link.txt');
    await write('links/link.txt', 'v2');
    assert.equal(await sh('readlink links/link.txt'), 'target.txt');
    assert.equal(await read('links/target.txt'), 'v2');
  });

  test('odd names and a directory the user cannot write (the file is then written in place)', async () => {
    await write('-dash/-file.txt', 'dash');
    assert.equal(await read('-dash/-file.txt'), 'dash');
    await sh('mkdir -p ro && echo v1 > ro/f && chmod 555 ro');
    await write('ro/f', 'v2');
    assert.equal(await read('ro/f'), 'v2');
    assert.equal((await failure(write('ro/new', 'x'))).status, 403);
    await sh('chmod 755 ro');
  });

  test('a server killed mid-upload leaves the previous version and no temporary file', async () => {
    await write('killed/doc.txt', 'v1');
    const up = streamingUpload('killed/doc.txt', 8 * 1024 * 1024, 8 * 1024 * 1024);
    await up.holding;
    await sleep(300);
    await server.restart();
    up.release();
    await assert.rejects(up.response);
    assert.equal(await temps('killed'), '');
    assert.equal(await read('killed/doc.txt'), 'v1');
  });

  test('a stale temporary file from a writer that is gone is removed by the next write to its directory', async () => {
    await sh('mkdir -p stale && touch -d "2 hours ago" stale/.a.devboxd-0123456789abcdef && touch stale/.b.devboxd-0123456789abcdef');
    await write('stale/doc.txt', 'x');
    assert.equal(await sh('ls -A stale | tr "\\n" " "'), '.b.devboxd-0123456789abcdef doc.txt');
  });

  test('a suspend in the middle of an upload is a 409 and the previous version survives the resume', async () => {
    await write('susp/doc.txt', 'v1');
    const up = streamingUpload('susp/doc.txt', 8 * 1024 * 1024, 4 * 1024 * 1024);
    await up.holding;
    await sleep(200);
    await api().devboxes.suspend(box.id);
    const res = await up.response;
    up.release();
    assert.equal(res.status, 409);
    assert.equal(res.headers.get('x-should-retry'), 'false');
    assert.match(((await res.json()) as { message: string }).message, /devbox stopped/);
    await api().devboxes.awaitSuspended(box.id);
    await api().devboxes.resume(box.id);
    await api().devboxes.awaitRunning(box.id);
    assert.equal(await read('susp/doc.txt'), 'v1');
    assert.equal(await temps('susp'), '');
  });

  test('a shutdown in the middle of an upload or a read is a 409', async () => {
    const other = await server.sdk().devbox.create({ name: 'files-shutdown' });
    await sh('head -c 60M /dev/urandom > big.bin', other);
    const up = streamingUpload('doc.bin', 8 * 1024 * 1024, 4 * 1024 * 1024, other);
    await up.holding;
    await sleep(200);
    const reading = failure(api().devboxes.readFileContents(other.id, { file_path: 'big.bin' })).catch(() => ({ status: 200, message: '' }));
    await other.shutdown();
    const res = await up.response;
    up.release();
    assert.equal(res.status, 409);
    assert.match(((await res.json()) as { message: string }).message, /devbox stopped \(it is shutdown\)/);
    // The read either finished first or was cut: never a 5xx.
    assert.ok([200, 409].includes((await reading).status), JSON.stringify(await reading));
  });
});

describe('multipart mistakes are 400s', () => {
  test('no boundary, wrong boundary, garbage, unterminated, unnamed part, unknown part', async () => {
    const good = head('path') + 'mp/x.txt\r\n' + head('file', 'x') + 'data\r\n';
    const cases: Array<[string, string | Buffer, string?]> = [
      ['no boundary', good + `--${BOUNDARY}--\r\n`, 'multipart/form-data'],
      ['wrong boundary', good + `--${BOUNDARY}--\r\n`, 'multipart/form-data; boundary=other'],
      ['garbage', randomBytes(4096)],
      ['unterminated', good],
      ['unnamed part', `--${BOUNDARY}\r\nContent-Disposition: form-data; filename="x"\r\n\r\ndata\r\n--${BOUNDARY}--\r\n`],
      ['unknown part', head('paht') + 'mp/x.txt\r\n' + head('file', 'x') + `data\r\n--${BOUNDARY}--\r\n`],
    ];
    for (const [name, body, type] of cases) {
      const r = await rawUpload(body, type);
      assert.equal(r.status, 400, `${name}: ${r.status} ${r.text}`);
      assert.ok(r.json.message, `${name}: no JSON message in ${r.text}`);
    }
    const other = await rawUpload('path=x', 'application/x-www-form-urlencoded');
    assert.equal(other.status, 415);
    assert.ok(other.json.message);
    assert.equal(await sh('ls mp 2>/dev/null || true'), '');
  });

  test('two file parts are a 400 and leave the destination as it was', async () => {
    await write('two/doc.txt', 'v1');
    const body = head('path') + 'two/doc.txt\r\n' + head('file', 'a') + 'first\r\n' + head('file', 'b') + `second\r\n--${BOUNDARY}--\r\n`;
    const r = await rawUpload(body);
    assert.equal(r.status, 400);
    assert.match(r.json.message ?? '', /more than one file/);
    assert.equal(await read('two/doc.txt'), 'v1');
    assert.equal(await temps('two'), '');
  });

  test('a body shorter than its content-length gets a 408 once it stalls, and changes nothing', async () => {
    await write('stall/doc.txt', 'v1');
    const start = head('path') + 'stall/doc.txt\r\n' + head('file', 'a') + 'v2 and more';
    const t0 = Date.now();
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${server.url}/v1/devboxes/${box.id}/upload_file`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ADMIN_KEY}`,
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
          'content-length': String(start.length + 1000),
        },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
          req.destroy();
        });
      });
      req.on('error', reject);
      req.write(start);
    });
    assert.equal(answer.status, 408, answer.body);
    assert.match((JSON.parse(answer.body) as { message: string }).message, /stalled/);
    assert.ok(Date.now() - t0 >= 2900, `answered after ${Date.now() - t0} ms`);
    assert.equal(await read('stall/doc.txt'), 'v1');
    assert.equal(await temps('stall'), '');
  });

  test('a path after the bytes still works and replaces the file atomically', async () => {
    await write('late/doc.txt', 'v1');
    const r = await rawUpload(head('file', 'a') + 'v2\r\n' + head('path') + `late/doc.txt\r\n--${BOUNDARY}--\r\n`);
    assert.equal(r.status, 200, r.text);
    assert.equal(await read('late/doc.txt'), 'v2');
    assert.equal(await sh('ls -A ~ | grep -c devboxd- || true'), '0');
    const missing = await rawUpload(head('file', 'a') + `v3\r\n--${BOUNDARY}--\r\n`);
    assert.equal(missing.status, 400);
    assert.equal(await read('late/doc.txt'), 'v2');
    assert.equal(await sh('ls -A ~ | grep -c devboxd- || true'), '0');
  });
});

describe('paths', () => {
  test('a 4096-byte path, a name over 255 bytes and a NUL are 400s naming the field', async () => {
    const long = 'a/'.repeat(2048);
    const name = 'n'.repeat(256);
    for (const [p, why] of [
      [long, /4095/],
      [`dir/${name}`, /255/],
      ['nul\0byte', /NUL/],
    ] as const) {
      const w = await failure(write(p, 'x'));
      assert.equal(w.status, 400, `${w.status} ${w.message}`);
      // The field first: the server's check, or the schema's (the 4096-byte path, past its maxLength).
      assert.match(w.message, /^(invalid body\.)?file_path[: ]/);
      assert.match(w.message, why);
      const r = await failure(read(p));
      assert.equal(r.status, 400);
      assert.match(r.message, /^(invalid body\.)?file_path[: ]/);
      const d = await failure(api().devboxes.downloadFile(box.id, { path: p }));
      assert.equal(d.status, 400);
      assert.match(d.message, /^(invalid body\.)?path[: ]/);
      const u = await failure(api().devboxes.uploadFile(box.id, { path: p, file: await toFile(Buffer.from('x'), 'x') }));
      assert.equal(u.status, 400);
      assert.match(u.message, /^path /);
    }
  });
});

describe('paths near the limit', () => {
  test('a path just under PATH_MAX whose temporary name would exceed it is a 400, not a 500', async () => {
    const p = `deep/${'d'.repeat(200)}/`.repeat(19) + 'f'.repeat(166);
    assert.equal(Buffer.byteLength(p), 4080);
    try {
      const w = await failure(write(p, 'x'));
      assert.equal(w.status, 400, w.message);
      assert.match(w.message, /too long/);
    } finally {
      // Host paths of the box's disk are longer than the box's: a tree this deep is removed from inside.
      await sh('rm -rf deep');
    }
  });
});

describe('refusals over HTTP/2 and HTTP/1.1 leave the connection usable', () => {
  test('an upload to a directory is a 400 and the next request on the client works', async () => {
    for (const http2 of [true, false]) {
      const client = server.client({ maxRetries: 0, http2 });
      const big = await toFile(randomBytes(4 * 1024 * 1024), 'big.bin');
      const r = await failure(client.devboxes.uploadFile(box.id, { path: '/tmp', file: big }));
      assert.equal(r.status, 400, `http2=${http2}: ${r.message}`);
      assert.match(r.message, /is a directory/);
      await client.devboxes.writeFileContents(box.id, { file_path: 'after-refusal.txt', contents: String(http2) });
      assert.equal(await client.devboxes.readFileContents(box.id, { file_path: 'after-refusal.txt' }), String(http2));
    }
  });

  test('a FIFO is refused instead of hanging the download', async () => {
    await sh('rm -f fifo && mkfifo fifo');
    const r = await failure(api().devboxes.downloadFile(box.id, { path: 'fifo' }));
    assert.equal(r.status, 400);
    assert.match(r.message, /not a regular file/);
  });
});

describe('what a path names', () => {
  test('devices, sockets and /proc files are 4xx naming the path on read, write and download, never 5xx', async () => {
    await sh('rm -f sock && python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\'sock\')"');
    const outcomes: string[] = [];
    for (const p of ['/dev/tty', '/proc/self/mem', '/proc/1/mem', 'sock']) {
      for (const [op, call] of [
        ['read', () => read(p)],
        ['write', () => write(p, 'x')],
        ['download', () => api().devboxes.downloadFile(box.id, { path: p })],
      ] as const) {
        const r = await (call() as Promise<unknown>).then(
          () => ({ status: 200, message: p }),
          (e: { status: number; error?: { message?: string } }) => ({
            status: e.status,
            message: e.error?.message ?? '',
          }),
        );
        outcomes.push(`${op} ${p}: ${r.status} ${r.message}`);
        assert.ok(r.status < 500, `${op} ${p}: ${r.status} ${r.message}`);
        assert.ok(r.message.includes(p), `${op} ${p}: ${r.message}`);
      }
    }
    // /dev/tty (no terminal: ENXIO) is refused by every operation, whatever else a kernel file allows.
    assert.deepEqual(
      outcomes.filter((o) => o.includes('/dev/tty') && !o.includes(': 400 ')),
      [],
      outcomes.join('\n'),
    );
  });

  test('a path of 4095 bytes is what the OpenAPI document allows and the server takes; 4096 neither', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: { properties: Record<string, { maxLength: number }> } }> } } }>;
    };
    const schema = (op: string) => doc.paths[op]!.post.requestBody.content['application/json']!.schema.properties;
    assert.equal(schema('/v1/devboxes/{id}/read_file_contents').file_path!.maxLength, 4095);
    assert.equal(schema('/v1/devboxes/{id}/write_file_contents').file_path!.maxLength, 4095);
    assert.equal(schema('/v1/devboxes/{id}/download_file').path!.maxLength, 4095);
    // 4095 bytes pass the checks (the box then has no such file); 4096 is refused before any lookup.
    const at = `/tmp/${'d/'.repeat(2044)}xx`;
    assert.equal(Buffer.byteLength(at), 4095);
    assert.equal((await failure(read(at))).status, 404);
    assert.equal((await failure(read(`${at}x`))).status, 400);
  });
});

describe('downloads racing with changes to the path', () => {
  test('a path swapped between file, directory, symlink and nothing never gives a 5xx', async () => {
    await sh('mkdir -p race && echo data > race/f && mkdir -p race/d');
    const loop = await box.cmd.execAsync(
      'cd race; for i in $(seq 1 20000); do ln -sfn f s; rm s; mkdir s; rmdir s; ln -sfn d s; rm s; cp f s; rm s; ln -sfn /etc s; rm s; done',
    );
    const statuses = new Map<number, number>();
    for (let round = 0; round < 25; round++) {
      await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          let status = 200;
          try {
            if (i % 2 === 0) await (await api().devboxes.downloadFile(box.id, { path: 'race/s' })).arrayBuffer();
            else await read('race/s');
          } catch (err) {
            const e = err as { status: number; error?: { message?: string } };
            status = e.status;
            assert.ok(e.error?.message, `a ${status} without a JSON message`);
          }
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }),
      );
    }
    await loop.kill().catch(() => undefined);
    for (const s of statuses.keys()) assert.ok(s < 500, `got ${s}: ${JSON.stringify([...statuses])}`);
    assert.ok((statuses.get(404) ?? 0) + (statuses.get(400) ?? 0) > 0, `the race never hit: ${JSON.stringify([...statuses])}`);
  });
});
