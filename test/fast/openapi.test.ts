import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { toKeyView } from '../../src/resources/apikeys/routes/schemas.js';
import { toView as toDevboxView } from '../../src/resources/devboxes/routes/schemas.js';
import { toAsyncView } from '../../src/resources/executions/routes/schemas.js';
import { toStatusView, toView as toSnapshotView } from '../../src/resources/snapshots/routes/schemas.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';

interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }>;
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

let f: FastApp;
let doc: Doc;
before(async () => {
  f = await buildFastApp();
  const res = await f.call({ method: 'GET', url: '/openapi.json', key: null });
  assert.equal(res.statusCode, 200);
  doc = res.json() as Doc;
});
after(async () => f?.close());

test('/openapi.json validates as OpenAPI 3.1', async () => {
  assert.equal(doc.openapi, '3.1.0');
  const validator = new Validator();
  const result = await validator.validate(doc as unknown as Record<string, unknown>);
  assert.equal(validator.version, '3.1');
  assert.deepEqual(result.errors ?? [], []);
  assert.equal(result.valid, true);
});

test('every operation describes its 200 answer and the {message, error} shape of 4xx and 5xx', () => {
  const operations = Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => [`${m} ${p}`, op] as const));
  assert.ok(operations.length >= 38, `only ${operations.length} operations`);
  for (const [name, op] of operations) {
    const ok = op.responses?.['200']?.content;
    assert.ok(ok && Object.values(ok).every((c) => c.schema), `${name}: no 200 schema`);
    for (const status of ['4XX', '5XX']) {
      const props = op.responses?.[status]?.content?.['application/json']?.schema?.properties;
      assert.deepEqual(Object.keys(props ?? {}).sort(), ['error', 'message'], `${name}: ${status}`);
    }
  }
});

/** What the view function returns, as JSON.stringify would send it. */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

test('response schemas drop and coerce nothing: each answer equals its view as plain JSON', async () => {
  const accountId = (await f.call({ method: 'GET', url: '/v1/accounts/me' })).json().id as string;
  const created = await f.call({
    method: 'POST',
    url: '/v1/devboxes/create_and_await_running',
    payload: { name: 'v', metadata: { k: 'v' }, launch_parameters: { resource_size_request: 'SMALL', launch_commands: ['true'] } },
  });
  const id = created.json().id as string;
  assert.deepEqual(created.json(), plain(toDevboxView(await f.deps.devboxes.get(accountId, id))));
  assert.deepEqual(created.json().launch_parameters, { resource_size_request: 'SMALL', launch_commands: ['true'] });

  f.runtime.run = () => ({ stdout: 'out\n', stderr: 'err\n', exitCode: 3 });
  const exec = await f.call({ method: 'POST', url: `/v1/devboxes/${id}/execute`, payload: { command: 'x', command_id: 'c' } });
  const e = await f.deps.executions.get(accountId, id, exec.json().execution_id);
  assert.deepEqual(exec.json(), plain(toAsyncView(e, await f.deps.executions.output(e, 100))));
  assert.deepEqual([exec.json().exit_status, exec.json().stdout, exec.json().stderr], [3, 'out\n', 'err\n']);

  const snap = await f.call({ method: 'POST', url: `/v1/devboxes/${id}/snapshot_disk`, payload: { commit_message: 'm' } });
  const s = await f.deps.snapshots.get(accountId, snap.json().id);
  assert.deepEqual(snap.json(), plain(toSnapshotView(s)));
  const status = await f.call({ method: 'GET', url: `/v1/devboxes/disk_snapshots/${s.id}/status` });
  assert.deepEqual(status.json(), plain(toStatusView(s)));

  const keys = await f.call({ method: 'GET', url: '/v1/apikeys' });
  const page = await f.deps.accounts.listKeys(accountId, { limit: 20, includeTotalCount: true });
  assert.deepEqual(keys.json().api_keys, plain(page.items.map(toKeyView)));

  // Seconds are fractional (the box is well under a second old): an integer schema would make them 0.
  await new Promise((r) => setTimeout(r, 15));
  const usage = (await f.call({ method: 'GET', url: `/v1/devboxes/${id}/usage` })).json();
  assert.ok(usage.total_elapsed_seconds > 0 && usage.total_elapsed_seconds < 5, String(usage.total_elapsed_seconds));
});

test('errors keep their shape through the error schema', async () => {
  const res = await f.call({ method: 'GET', url: '/v1/devboxes/dbx_missing' });
  assert.equal(res.statusCode, 404);
  assert.deepEqual(res.json(), { message: 'devbox dbx_missing not found', error: 'not_found' });
  const bad = await f.call({ method: 'POST', url: '/v1/devboxes', payload: { name: 5 } });
  assert.equal(bad.statusCode, 400);
  assert.deepEqual(bad.json(), { message: 'invalid body.name: must be string', error: 'invalid_request' });
});

test('/docs serves the reference page from this server alone: no key, no asset from anywhere else', async () => {
  let res = await f.call({ method: 'GET', url: '/docs', key: null });
  for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops++) {
    res = await f.call({ method: 'GET', url: new URL(res.headers.location as string, 'http://x/docs/').pathname, key: null });
  }
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'] as string, /text\/html/);
  const html = res.body;
  assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//, 'every asset is served from here');
  const assets = [...html.matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => new URL(m[1]!, 'http://x/docs/static/index.html').pathname);
  assert.ok(
    assets.some((a) => a.endsWith('swagger-ui-bundle.js')),
    assets.join(' '),
  );
  for (const a of assets) assert.equal((await f.call({ method: 'GET', url: a, key: null })).statusCode, 200, a);
  const json = (await f.call({ method: 'GET', url: '/docs/json', key: null })).json() as Doc;
  assert.deepEqual(Object.keys(json.paths), Object.keys(doc.paths));
});
