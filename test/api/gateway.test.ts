/**
 * The agent gateway through the official SDK and real boxes (issue 12, item 3): a box calls a fake upstream
 * on the host through `$<PREFIX>_URL` with the `gws_` token in `$<PREFIX>`; the upstream gets the real secret
 * (per auth_mechanism, then custom headers) and never the token; a streamed answer reaches the box event by
 * event; foreign tokens are 401s that send nothing upstream; tokens die with their box.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type Runloop from '@runloop/api-client';
import { startTestServer, type TestServer, runInBox } from '../helpers/server.js';

const SECRET_VALUE = 'sk-upstream-real-key-7f3a9c';
const OTHER_VALUE = 'other-real-key-55e1';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let server: TestServer;
let api: Runloop;
let upstream: Server;
let upstreamUrl: string;
const seen: Seen[] = [];
/** When the upstream wrote each event of its last stream (ms since the epoch). */
let sentAt: number[] = [];

before(async () => {
  server = await startTestServer();
  api = server.client();
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url === '/v1/messages') {
        // An SSE answer in five writes 300 ms apart, as an LLM API streams tokens.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        sentAt = [];
        let i = 0;
        const write = () => {
          sentAt.push(Date.now());
          res.write(`event: delta\ndata: {"i":${i}}\n\n`);
          if (++i < 5) setTimeout(write, 300);
          else res.end();
        };
        write();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, method: req.method, url: req.url, body }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});

after(async () => {
  upstream?.closeAllConnections();
  upstream?.close();
  await server?.stop();
});

const sh = (boxId: string, command: string) => runInBox(api, boxId, command);

/** `curl` from inside the box: the HTTP status, after the body. */
async function curlStatus(boxId: string, args: string): Promise<{ status: number; body: string }> {
  const r = await sh(boxId, `curl -sS -m 20 -o /tmp/body -w '%{http_code}' ${args}; echo; cat /tmp/body`);
  assert.equal(r.code, 0, r.err);
  const [status, ...body] = r.out.split('\n');
  return { status: Number(status), body: body.join('\n') };
}

/**
 * The box's rows in gateway_bindings, read from the SQLite file. On PostgreSQL (DEVBOXD_TEST_DATABASE) the
 * test does not see the server's database: those checks are left to the store contract there.
 */
const onSqlite = process.env.DEVBOXD_TEST_DATABASE !== 'postgres';
function bindingsOf(devboxId: string): number {
  const db = new Database(path.join(server.apiDir, 'devboxd.db'), { readonly: true, fileMustExist: true });
  try {
    // Bindings that hold a token (an ended box keeps its create-request bindings, without one, for gateway_specs).
    return (db.prepare("SELECT COUNT(*) AS n FROM gateway_bindings WHERE devbox_id = ? AND token_sealed <> ''").get(devboxId) as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('agent gateway', () => {
  let llm: { id: string };
  let other: { id: string };
  let box: { id: string };
  let box2: { id: string };

  before(async () => {
    const secret = await api.secrets.create({ name: 'GW_UPSTREAM_KEY', value: SECRET_VALUE });
    await api.secrets.create({ name: 'GW_OTHER_KEY', value: OTHER_VALUE });
    llm = await api.gatewayConfigs.create({
      name: 'llm-upstream',
      endpoint: upstreamUrl,
      auth_mechanism: { type: 'header', key: 'x-api-key' },
      custom_headers: [
        { name: 'X-Team', value: 'blue' },
        { name: 'X-Org-Key', secret: secret.id },
      ],
    });
    other = await api.gatewayConfigs.create({ name: 'other-upstream', endpoint: `${upstreamUrl}/other`, auth_mechanism: { type: 'bearer' } });
    [box, box2] = await Promise.all([
      api.devboxes.createAndAwaitRunning({
        gateways: { LLM: { gateway: 'llm-upstream', secret: 'GW_UPSTREAM_KEY' }, OTHER: { gateway: other.id, secret: 'GW_OTHER_KEY' } },
      }),
      api.devboxes.createAndAwaitRunning({ gateways: { LLM: { gateway: llm.id, secret: 'GW_UPSTREAM_KEY' } } }),
    ]);
  });

  test('the view carries gateway_specs; the box sees the URL and the token, never the secret', async () => {
    const view = await api.devboxes.retrieve(box.id);
    const secretId = (await api.secrets.list()).secrets.find((s) => s.name === 'GW_UPSTREAM_KEY')!.id;
    assert.deepEqual(view.gateway_specs?.['LLM'], { gateway_config_id: llm.id, secret_id: secretId });
    assert.equal(view.gateway_specs?.['OTHER']?.gateway_config_id, other.id);
    const env = await sh(box.id, 'env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"; ps auxe');
    assert.match(env.out, /^LLM=gws_[A-Za-z0-9_-]{32}$/m);
    assert.match(env.out, /^LLM_URL=http:\/\/127\.0\.0\.1:1023\/gateway\/gwb_\w+$/m);
    assert.match(env.out, /^OTHER=gws_/m);
    assert.ok(!env.out.includes(SECRET_VALUE) && !env.out.includes(OTHER_VALUE), 'no secret value in the box');
  });

  test('a streamed answer reaches the box event by event; the upstream saw the real key and custom headers, never the token', async () => {
    seen.length = 0;
    // Each line as the box's curl gets it, stamped with the box's clock (the host's: no time namespace).
    // One python process stamps the lines (a `date` forked per line took longer than the gap on a busy host),
    // and it starts curl itself: stamping is ready before the request goes, so a slow interpreter start on a
    // loaded host cannot make the first event look late.
    const stamp =
      'import subprocess, sys, time\np = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)\n' +
      'for l in p.stdout:\n  l = l.decode()\n  l.startswith("data:") and print(int(time.time() * 1000), l.rstrip("\\n"), flush=True)\nsys.exit(p.wait())';
    const r = await sh(
      box.id,
      `python3 -u -c '${stamp}' curl -sSN -m 20 "$LLM_URL/v1/messages" -H "Authorization: Bearer $LLM" -H 'content-type: application/json' -d '{"stream":true}'; ` +
        'echo "token=$LLM"',
    );
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trim().split('\n');
    const token = lines.pop()!.slice('token='.length);
    const got = lines.map((l) => ({ at: Number(l.split(' ')[0]), data: l.slice(l.indexOf(' ') + 1) }));
    assert.deepEqual(
      got.map((g) => g.data),
      [0, 1, 2, 3, 4].map((i) => `data: {"i":${i}}`),
    );
    // Event i arrives before the upstream writes event i+1 (300 ms later): nothing holds the stream back.
    for (let i = 0; i < 4; i++) assert.ok(got[i]!.at < sentAt[i + 1]!, `event ${i} at ${got[i]!.at}, event ${i + 1} sent at ${sentAt[i + 1]}`);
    assert.ok(got[4]!.at - got[0]!.at >= 1000, `events spread over ${got[4]!.at - got[0]!.at} ms`);

    assert.equal(seen.length, 1);
    const h = seen[0]!.headers;
    assert.equal(seen[0]!.method, 'POST');
    assert.equal(seen[0]!.url, '/v1/messages');
    assert.equal(seen[0]!.body, '{"stream":true}');
    assert.equal(h['x-api-key'], SECRET_VALUE);
    assert.equal(h['x-team'], 'blue');
    assert.equal(h['x-org-key'], SECRET_VALUE);
    assert.equal(h.authorization, undefined, 'header auth sends no Authorization');
    assert.match(token, /^gws_/);
    assert.ok(!JSON.stringify(seen).includes(token) && !JSON.stringify(seen).includes('gws_'), 'the token never reaches the upstream');
  });

  test('bearer auth: any method, path and query under the URL reach the endpoint path with Authorization: Bearer <secret>', async () => {
    seen.length = 0;
    const r = await curlStatus(box.id, `-X PUT "$OTHER_URL/v2/items/a%20b?x=1&y=two" -H "Authorization: Bearer $OTHER" -d 'payload'`);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { ok: true, method: 'PUT', url: '/other/v2/items/a%20b?x=1&y=two', body: 'payload' });
    assert.equal(seen[0]!.headers.authorization, `Bearer ${OTHER_VALUE}`);
  });

  test("another binding's token, another box's token, no token: 401 and nothing goes upstream", async () => {
    seen.length = 0;
    const wrongBinding = await curlStatus(box.id, `"$LLM_URL/v1/x" -H "Authorization: Bearer $OTHER"`);
    assert.equal(wrongBinding.status, 401);
    assert.equal(typeof JSON.parse(wrongBinding.body).message, 'string');
    assert.equal((await curlStatus(box.id, `"$LLM_URL/v1/x"`)).status, 401);
    // box2's own token and URL, sent from box: the token belongs to box2, the connection comes from box.
    const env2 = await sh(box2.id, 'echo "$LLM $LLM_URL"');
    const [token2, url2] = env2.out.trim().split(' ');
    assert.equal((await curlStatus(box.id, `"${url2}/v1/x" -H "Authorization: Bearer ${token2}"`)).status, 401);
    assert.equal((await curlStatus(box.id, `"$LLM_URL/v1/x" -H "Authorization: Bearer ${token2}"`)).status, 401);
    assert.equal(seen.length, 0);
    // The same token from its own box passes.
    assert.equal((await curlStatus(box2.id, `"$LLM_URL/v1/x" -H "Authorization: Bearer $LLM"`)).status, 200);
  });

  test('create_gateway_token: a further token for the box, usable from it at the URL it names', async () => {
    const t = await api.devboxes.createGatewayToken(box.id, { gateway: other.id, secret: 'GW_OTHER_KEY' });
    assert.match(t.token, /^gws_/);
    assert.equal(t.devbox_id, box.id);
    assert.equal(t.gateway_config_id, other.id);
    assert.equal(t.endpoint, `${upstreamUrl}/other`);
    assert.deepEqual(t.auth_mechanism, { type: 'bearer' });
    seen.length = 0;
    assert.equal((await curlStatus(box.id, `"${t.url}/ping" -H "Authorization: Bearer ${t.token}"`)).status, 200);
    assert.equal(seen[0]!.headers.authorization, `Bearer ${OTHER_VALUE}`);
    assert.equal((await curlStatus(box2.id, `"${t.url}/ping" -H "Authorization: Bearer ${t.token}"`)).status, 401);
  });

  test('an upstream that is down is a 502 JSON in the box', async () => {
    const down = await api.gatewayConfigs.create({ name: 'down', endpoint: 'http://127.0.0.1:9', auth_mechanism: { type: 'bearer' } });
    const t = await api.devboxes.createGatewayToken(box.id, { gateway: down.id, secret: 'GW_OTHER_KEY' });
    const r = await curlStatus(box.id, `"${t.url}/x" -H "Authorization: Bearer ${t.token}"`);
    assert.equal(r.status, 502);
    assert.match(JSON.parse(r.body).message, /upstream http:\/\/127\.0\.0\.1:9 failed/);
  });

  test('after a server restart (kill -9) the box keeps its token and reaches the upstream through the gateway', async () => {
    const before = (await sh(box.id, 'echo $LLM')).out;
    await server.restart();
    assert.equal((await sh(box.id, 'echo $LLM')).out, before);
    seen.length = 0;
    assert.equal((await curlStatus(box.id, `"$LLM_URL/v1/after-restart" -H "Authorization: Bearer $LLM"`)).status, 200);
    assert.equal(seen[0]!.headers['x-api-key'], SECRET_VALUE);
  });

  test('tokens die with the box: its bindings go at shutdown, and no token is minted for it any more', async () => {
    const d = await api.devboxes.createAndAwaitRunning({ gateways: { LLM: { gateway: llm.id, secret: 'GW_UPSTREAM_KEY' } } });
    await api.devboxes.createGatewayToken(d.id, { gateway: llm.id, secret: 'GW_UPSTREAM_KEY' });
    if (onSqlite) assert.equal(bindingsOf(d.id), 2);
    // Suspend keeps them: the box resumes with the same variables.
    const before = await sh(d.id, 'echo $LLM');
    await api.devboxes.suspend(d.id);
    await api.devboxes.awaitSuspended(d.id);
    if (onSqlite) assert.equal(bindingsOf(d.id), 2);
    await api.devboxes.resume(d.id);
    await api.devboxes.awaitRunning(d.id);
    assert.equal((await sh(d.id, 'echo $LLM')).out, before.out);
    assert.equal((await curlStatus(d.id, `"$LLM_URL/v1/x" -H "Authorization: Bearer $LLM"`)).status, 200);
    await api.devboxes.shutdown(d.id);
    if (onSqlite) {
      for (let i = 0; i < 100 && bindingsOf(d.id) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(bindingsOf(d.id), 0);
    }
    const ended = (await api.devboxes.retrieve(d.id)) as unknown as { gateway_specs?: Record<string, { gateway_config_id: string }> };
    assert.equal(ended.gateway_specs?.LLM?.gateway_config_id, llm.id, 'an ended box keeps gateway_specs');
    await assert.rejects(
      api.devboxes.createGatewayToken(d.id, { gateway: llm.id, secret: 'GW_UPSTREAM_KEY' }),
      (err: { status?: number }) => err.status === 400,
    );
  });
});
