import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { RESOURCE_TYPES, type ResourceType } from '../../src/platform/auth/principal.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { DEVBOXD_BIN } from '../helpers/server.js';
import { OPERATOR_ROUTES, ROUTES, UPLOAD, type Level, type Need } from './route-table.js';

/**
 * Walks every operation of /openapi.json: 401 without a key or with a bad one, 403 for a restricted key
 * missing any grant the route needs (a read-only key on a write route included), allowed with exactly those
 * grants, and 404 for another account's ids (never a status that would tell them apart from unknown ids).
 */
let f: FastApp;
let operations: string[];
/** Account A's resources (the admin key's account). */
const a = { devbox: '', execution: '', snapshot: '', key: '', agent: '', axon: '' };
let keyB: string;
let devboxB: string;

const LEVEL_NAME: Record<Level | 'none', string> = { none: 'ACCESS_LEVEL_NONE', read: 'ACCESS_LEVEL_READ', write: 'ACCESS_LEVEL_WRITE' };
const BELOW: Record<Level, Level | 'none'> = { read: 'none', write: 'read' };

async function json<T = Record<string, unknown>>(opts: Parameters<FastApp['call']>[0]): Promise<T> {
  const res = await f.call(opts);
  assert.equal(res.statusCode, 200, `${opts.method} ${opts.url}: ${res.body}`);
  return res.json() as T;
}

const keys = new Map<string, string>();
/** A restricted key of account A with these levels (every other resource type: none). */
async function restricted(levels: Partial<Record<ResourceType, Level | 'none'>>): Promise<string> {
  const scopes = RESOURCE_TYPES.map((t) => ({ resource_type: t, access_level: LEVEL_NAME[levels[t] ?? 'none'] }));
  const id = JSON.stringify(scopes);
  if (!keys.has(id)) keys.set(id, (await json<{ key_secret: string }>({ method: 'POST', url: '/v1/restricted_keys', payload: { scopes } })).key_secret);
  return keys.get(id)!;
}

/** Calls one operation with its table body and the given path ids. */
function call(op: string, key: string | null, ids: { id?: string; execution_id?: string } = {}) {
  const [method, template] = op.split(' ') as [string, string];
  const url = template.replace('{id}', ids.id ?? 'missing_id').replace('{execution_id}', ids.execution_id ?? 'missing_execution');
  const row = ROUTES[op]!;
  if (row.upload) return f.call({ method: method as 'POST', url, key, ...UPLOAD });
  return f.call({ method: method as 'GET', url, key, ...(method === 'GET' ? {} : { payload: row.body ?? {} }) });
}

function assertJsonError(res: { statusCode: number; body: string; json(): unknown }, status: number, what: string) {
  assert.equal(res.statusCode, status, `${what}: ${res.statusCode} ${res.body}`);
  const body = res.json() as { message?: unknown; error?: unknown };
  assert.equal(typeof body.message, 'string', `${what}: no JSON message`);
  assert.equal(typeof body.error, 'string', `${what}: no error code`);
}

before(async () => {
  f = await buildFastApp();
  const doc = (await f.call({ method: 'GET', url: '/openapi.json', key: null })).json() as { paths: Record<string, Record<string, unknown>> };
  operations = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));

  a.devbox = (await json<{ id: string }>({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: { name: 'a' } })).id;
  a.execution = (
    await json<{ execution_id: string }>({ method: 'POST', url: `/v1/devboxes/${a.devbox}/execute_async`, payload: { command: 'true' } })
  ).execution_id;
  a.snapshot = (await json<{ id: string }>({ method: 'POST', url: `/v1/devboxes/${a.devbox}/snapshot_disk`, payload: { name: 'a' } })).id;
  a.key = (await json<{ id: string }>({ method: 'POST', url: '/v1/apikeys', payload: { name: 'a' } })).id;
  a.agent = (
    await json<{ id: string }>({
      method: 'POST',
      url: '/v1/agents',
      payload: { name: 'a', source: { type: 'git', git: { repository: 'https://git.test/a.git' } } },
    })
  ).id;
  a.axon = (await json<{ id: string }>({ method: 'POST', url: '/v1/axons', payload: { name: 'a' } })).id;

  // Account B, made the way an operator makes one, beside the running app.
  const out = execFileSync(process.execPath, [DEVBOXD_BIN, 'accounts', 'create', 'team-b'], {
    env: { ...process.env, DEVBOXD_DATA_DIR: f.dataDir },
  }).toString();
  keyB = out.trim().split('\n').at(-1)!;
  devboxB = (await json<{ id: string }>({ method: 'POST', url: '/v1/devboxes/create_and_await_running', key: keyB, payload: {} })).id;
});
after(async () => f?.close());

test('the table covers every operation of /openapi.json, and nothing else', () => {
  assert.deepEqual([...operations].sort(), Object.keys(ROUTES).sort());
});

describe('authentication', () => {
  test('every operation answers 401 with a JSON message without a key, with a bad key and a malformed header', async () => {
    for (const op of operations) {
      assertJsonError(await call(op, null), 401, `${op} without a key`);
      assertJsonError(await call(op, 'ak_not_a_key_0000000000000000'), 401, `${op} with a bad key`);
      const [method, url] = op.split(' ') as ['GET', string];
      assertJsonError(await f.call({ method, url, key: null, headers: { authorization: 'Basic abc' } }), 401, `${op} with Basic auth`);
    }
  });
});

describe("the operator's routes", () => {
  test("answer 401 without a key or with a bad one, 403 to another account's key, 200 to any key of the operator's account", async () => {
    const noGrants = await restricted({});
    for (const op of OPERATOR_ROUTES) {
      const [method, url] = op.split(' ') as ['GET', string];
      assertJsonError(await f.call({ method, url, key: null }), 401, `${op} without a key`);
      assertJsonError(await f.call({ method, url, key: 'ak_not_a_key_0000000000000000' }), 401, `${op} with a bad key`);
      assertJsonError(await f.call({ method, url, key: null, headers: { authorization: 'Basic abc' } }), 401, `${op} with Basic auth`);
      assertJsonError(await f.call({ method, url, key: keyB }), 403, `${op} with another account's standard key`);
      assert.equal((await f.call({ method, url })).statusCode, 200, `${op} with the admin key`);
      assert.equal((await f.call({ method, url, key: noGrants })).statusCode, 200, `${op} with a restricted key without grants`);
    }
  });
});

describe('restricted keys', () => {
  test('a key lacking any grant an operation needs gets 403 (a read-only key on a write route included)', async () => {
    for (const op of operations) {
      for (const [resource, level] of ROUTES[op]!.needs) {
        const levels = Object.fromEntries(RESOURCE_TYPES.map((t) => [t, 'write'])) as Record<ResourceType, Level | 'none'>;
        levels[resource] = BELOW[level];
        const res = await call(op, await restricted(levels));
        assertJsonError(res, 403, `${op} with ${resource} ${BELOW[level]}`);
        assert.match((res.json() as { message: string }).message, new RegExp(resource), op);
      }
    }
  });

  test('a key with exactly the grants an operation needs is let through', async () => {
    for (const op of operations) {
      const needs: Need[] = ROUTES[op]!.needs;
      const res = await call(op, await restricted(Object.fromEntries(needs)));
      assert.ok(res.statusCode !== 401 && res.statusCode !== 403, `${op} with ${JSON.stringify(needs)}: ${res.statusCode} ${res.body}`);
    }
  });
});

describe("another account's ids", () => {
  const idsOf = (op: string) => ({
    id: op.includes('/disk_snapshots/{id}')
      ? a.snapshot
      : op.includes('/apikeys/{id}')
        ? a.key
        : op.includes('/agents/{id}')
          ? a.agent
          : op.includes('/axons/{id}')
            ? a.axon
            : a.devbox,
    execution_id: a.execution,
  });

  test('every operation on an id of account A answers account B 404 with a JSON message', async () => {
    // The public blueprint catalogue takes a metadata key, not an id of anyone's.
    for (const op of operations.filter((o) => o.includes('{') && !o.includes('/public/metadata/'))) {
      assertJsonError(await call(op, keyB, idsOf(op)), 404, `${op} with account A's ids`);
    }
  });

  test("an execution of A is not found through B's own devbox either", async () => {
    for (const op of operations.filter((o) => o.includes('{execution_id}'))) {
      assertJsonError(await call(op, keyB, { id: devboxB, execution_id: a.execution }), 404, op);
    }
  });

  test("lists show B none of A's resources, and a create from A's snapshot is a 404", async () => {
    const boxes = await json<{ devboxes: { id: string }[] }>({ method: 'GET', url: '/v1/devboxes', key: keyB });
    assert.deepEqual(
      boxes.devboxes.map((d) => d.id),
      [devboxB],
    );
    const snaps = await json<{ snapshots: unknown[] }>({ method: 'GET', url: `/v1/devboxes/disk_snapshots?devbox_id=${a.devbox}`, key: keyB });
    assert.deepEqual(snaps.snapshots, []);
    const apiKeys = await json<{ api_keys: { id: string }[] }>({ method: 'GET', url: '/v1/apikeys', key: keyB });
    assert.ok(!apiKeys.api_keys.some((k) => k.id === a.key));
    const logs = await f.call({ method: 'GET', url: `/v1/devboxes/${devboxB}/logs?execution_id=${a.execution}`, key: keyB });
    assertJsonError(logs, 404, 'logs filtered by an execution of A');
    const create = await f.call({ method: 'POST', url: '/v1/devboxes', key: keyB, payload: { snapshot_id: a.snapshot } });
    assertJsonError(create, 404, "create from A's snapshot");
  });

  test("B's calls changed nothing of A's", async () => {
    const box = await json<{ name: string; status: string }>({ method: 'GET', url: `/v1/devboxes/${a.devbox}` });
    assert.deepEqual([box.name, box.status], ['a', 'running']);
    const snap = await json<{ name: string }>({ method: 'GET', url: `/v1/devboxes/disk_snapshots/${a.snapshot}` });
    assert.equal(snap.name, 'a');
    const listed = await json<{ api_keys: { id: string }[] }>({ method: 'GET', url: '/v1/apikeys?limit=100' });
    assert.ok(
      listed.api_keys.some((k) => k.id === a.key),
      "A's key is still there",
    );
    assert.equal((await json<{ name: string }>({ method: 'GET', url: `/v1/agents/${a.agent}` })).name, 'a', "A's agent is still there");
  });
});

describe('fail-closed start', () => {
  test('an authenticated route without a resource type stops the start, naming the route', async () => {
    const g = await buildFastApp({ ready: false });
    try {
      g.app.get('/v1/unguarded', async () => ({ ok: true }));
      g.app.post('/v1/open', { config: { auth: false } }, async () => ({ ok: true }));
      await assert.rejects(
        async () => void (await g.app.ready()),
        (err: Error) => {
          assert.match(err.message, /refusing to start/);
          assert.match(err.message, /GET \/v1\/unguarded/);
          assert.doesNotMatch(err.message, /\/v1\/open/);
          return true;
        },
      );
    } finally {
      await g.deps.close();
      fs.rmSync(g.dataDir, { recursive: true, force: true });
    }
  });

  test('the same route with a resource type starts', async () => {
    const g = await buildFastApp({ ready: false });
    try {
      g.app.get('/v1/guarded', { config: { resource: 'RESOURCE_TYPE_OBJECTS' } }, async () => ({ ok: true }));
      await g.app.ready();
      assert.equal((await g.call({ method: 'GET', url: '/v1/guarded' })).statusCode, 200);
    } finally {
      await g.close();
    }
  });
});
