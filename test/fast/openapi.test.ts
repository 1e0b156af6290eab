import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { toKeyView } from '../../src/resources/apikeys/routes/schemas.js';
import { toView as toDevboxView } from '../../src/resources/devboxes/routes/schemas.js';
import { toAsyncView } from '../../src/resources/executions/routes/schemas.js';
import { toStatusView, toView as toSnapshotView } from '../../src/resources/snapshots/routes/schemas.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { sdkCalls } from '../helpers/sdk-operations.js';

type Schema = { $ref?: string; title?: string; properties?: Record<string, unknown> } & Record<string, unknown>;
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  'x-sdk-methods'?: string[];
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

let f: FastApp;
let doc: Doc;
/** `POST /v1/devboxes/{id}` → its operation. */
let operations: Map<string, Operation>;
before(async () => {
  f = await buildFastApp();
  const res = await f.call({ method: 'GET', url: '/openapi.json', key: null });
  assert.equal(res.statusCode, 200);
  doc = res.json() as Doc;
  operations = new Map(Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => [`${m.toUpperCase()} ${p}`, op] as const)));
});
after(async () => f?.close());

/** A schema with its `$ref` followed into components.schemas. */
const resolve = (s: Schema | undefined): Schema | undefined => (s?.$ref ? doc.components.schemas[s.$ref.replace('#/components/schemas/', '')] : s);

test('/openapi.json validates as OpenAPI 3.1', async () => {
  assert.equal(doc.openapi, '3.1.0');
  const validator = new Validator();
  const result = await validator.validate(doc as unknown as Record<string, unknown>);
  assert.equal(validator.version, '3.1');
  assert.deepEqual(result.errors ?? [], []);
  assert.equal(result.valid, true);
});

test('every operation describes its 200 answer and the {message, error} shape of 4xx and 5xx', () => {
  assert.ok(operations.size >= 139, `only ${operations.size} operations`);
  for (const [name, op] of operations) {
    const ok = op.responses?.['200']?.content;
    assert.ok(ok && Object.values(ok).every((c) => c.schema), `${name}: no 200 schema`);
    for (const status of ['4XX', '5XX']) {
      const props = resolve(op.responses?.[status]?.content?.['application/json']?.schema)?.properties;
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

test('every operation has a unique id, a summary, a description and a section', () => {
  const ids = new Map<string, string>();
  for (const [name, op] of operations) {
    assert.match(op.operationId ?? '', /^[A-Za-z]+(_[A-Za-z]+)+$/, `${name}: operationId`);
    assert.equal(ids.get(op.operationId!), undefined, `${name} and ${ids.get(op.operationId!)} share ${op.operationId}`);
    ids.set(op.operationId!, name);
    assert.ok(op.summary && op.summary.length <= 60 && !op.summary.includes('\n'), `${name}: summary ${op.summary}`);
    assert.ok(op.description && op.description.length > op.summary.length, `${name}: description`);
    assert.equal(op.tags?.length, 1, `${name}: tags`);
  }
  const sections = new Set([...operations.values()].map((op) => op.tags![0]));
  for (const tag of ['Devboxes', 'Executions', 'Files', 'Snapshots', 'Blueprints', 'Secrets', 'Objects']) assert.ok(sections.has(tag), tag);
});

test("operation ids are the official SDK's method names, `.` as `_`; devboxd's own start devboxd_", () => {
  const expected: Record<string, string> = {
    'POST /v1/devboxes': 'devboxes_create',
    'GET /v1/devboxes/disk_snapshots': 'devboxes_listDiskSnapshots',
    'POST /v1/devboxes/{id}/execute_async': 'devboxes_executeAsync',
    'POST /v1/devboxes/{id}/wait_for_status': 'devboxes_awaitRunning',
    'GET /v1/devboxes/{id}/usage': 'devboxes_retrieveResourceUsage',
    'GET /v1/devboxes/{id}/logs': 'devboxes_logs_list',
    'GET /v1/devboxes/{id}/executions/{execution_id}': 'devboxes_executions_retrieve',
    'GET /v1/devboxes/{id}/executions/{execution_id}/stream_stdout_updates': 'devboxes_executions_streamStdoutUpdates',
    'GET /v1/devboxes/disk_snapshots/{id}/status': 'devboxes_diskSnapshots_queryStatus',
    'POST /v1/restricted_keys': 'restrictedKeys_create',
    'GET /v1/axons/{id}/subscribe/sse': 'axons_subscribeSse',
    'POST /v1/scenarios/runs/{id}/download_logs': 'scenarios_runs_downloadLogs',
    'GET /v1/benchmark_runs/{id}/scenario_runs': 'benchmarkRuns_listScenarioRuns',
    'GET /v1/devboxes/{id}/logs/tail': 'devboxd_devboxes_logs_tail',
    'GET /v1/repositories/{id}/inspections': 'devboxd_repositories_listInspections',
  };
  for (const [name, id] of Object.entries(expected)) assert.equal(operations.get(name)?.operationId, id, name);
  assert.deepEqual(operations.get('POST /v1/devboxes/{id}/execute_async')?.['x-sdk-methods'], ['devboxes.executeAsync', 'devboxes.executions.executeAsync']);
  assert.match(operations.get('POST /v1/devboxes/{id}/execute_async')!.description!, /`client\.devboxes\.executions\.executeAsync\(\)`/);
});

/** SDK requests devboxd serves outside this document, and why. */
const NOT_IN_DOCUMENT: Record<string, string> = {
  'GET /pty/{}': "PTY endpoints answer on the PTY tunnel's host name, ahead of the API",
  'POST /pty/{}/control': "PTY endpoints answer on the PTY tunnel's host name, ahead of the API",
};

test('the ids follow the installed SDK: every request one of its methods sends is an operation listing that method', () => {
  const calls = sdkCalls();
  assert.ok(calls.length > 100, `only ${calls.length} SDK requests found: has the SDK's layout changed?`);
  const bySdk = new Map<string, string[]>();
  for (const c of calls) {
    const key = `${c.method} ${c.path}`;
    bySdk.set(key, [...new Set([...(bySdk.get(key) ?? []), c.sdk])]);
  }
  const shape = (name: string) => name.replace(/\{[^}]*\}/g, '{}');
  for (const [name, op] of operations) {
    const methods = bySdk.get(shape(name)) ?? [];
    const listed = op['x-sdk-methods'] ?? [];
    assert.deepEqual([...listed].sort(), [...methods].sort(), `${name}: the SDK methods that send it`);
    if (listed.length === 0) {
      assert.match(op.operationId!, /^devboxd_/, `${name}: no SDK method sends it`);
      continue;
    }
    // The id names the shortest of them (devboxes.listDiskSnapshots over devboxes.diskSnapshots.list).
    const depth = (m: string) => m.split('.').length;
    assert.equal(depth(listed[0]!), Math.min(...listed.map(depth)), `${name}: ${listed[0]} is not the shortest`);
    assert.equal(op.operationId, listed[0]!.replaceAll('.', '_'), name);
    bySdk.delete(shape(name));
  }
  assert.deepEqual([...bySdk.keys()].sort(), Object.keys(NOT_IN_DOCUMENT).sort(), 'SDK requests with no operation');
});

test('views are components: written once under their SDK names and referenced, never inlined', () => {
  const text = JSON.stringify(doc.paths);
  const views = ['DevboxView', 'DevboxListView', 'DevboxAsyncExecutionDetailView', 'DevboxSnapshotView', 'BlueprintView', 'SecretView', 'Error'];
  for (const name of views) {
    assert.ok(doc.components.schemas[name], `components.schemas.${name}`);
    assert.ok(text.includes(`"#/components/schemas/${name}"`), `${name} is referenced`);
  }
  assert.equal(resolve(operations.get('GET /v1/devboxes/{id}')?.responses?.['200']?.content?.['application/json']?.schema)?.title, 'DevboxView');
  const inline: string[] = [];
  const walk = (node: unknown, at: string): void => {
    if (Array.isArray(node)) node.forEach((v, i) => walk(v, `${at}/${i}`));
    else if (node && typeof node === 'object') {
      const s = node as Schema;
      if (typeof s.title === 'string' && (s.type || s.properties)) inline.push(`${at}: ${s.title}`);
      if (typeof s.$ref === 'string') assert.ok(resolve(s), `${at}: ${s.$ref} resolves`);
      for (const [k, v] of Object.entries(s)) walk(v, `${at}/${k}`);
    }
  };
  walk(doc.paths, '');
  assert.deepEqual(inline, [], 'a titled schema left inline: two different schemas share its title');
});
