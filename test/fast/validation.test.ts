import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { ROUTES } from './route-table.js';

/** Request validation on every JSON route: the 400 names the field, before any handler or lookup runs. */
let f: FastApp;
before(async () => {
  f = await buildFastApp();
});
after(async () => f?.close());

/** Routes that take a JSON body (those without one ignore what is sent, as the SDK sends nothing there). */
const jsonPosts = Object.entries(ROUTES)
  .filter(([op, row]) => op.startsWith('POST ') && row.body !== undefined)
  .map(([op, row]) => ({ op, url: op.slice(5).replace('{id}', 'missing_id').replace('{execution_id}', 'missing_execution'), body: row.body ?? {} }));

function assertBadRequest(res: { statusCode: number; body: string; json(): unknown }, pattern: RegExp, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.statusCode} ${res.body}`);
  const body = res.json() as { message: string; error: string };
  assert.equal(body.error, 'invalid_request', what);
  assert.match(body.message, pattern, what);
}

test('a field the API does not know is a 400 naming it, on every JSON route', async () => {
  assert.ok(jsonPosts.length >= 18, String(jsonPosts.length));
  for (const { op, url, body } of jsonPosts) {
    const res = await f.call({ method: 'POST', url, payload: { ...body, zz_unknown: 1 } });
    assertBadRequest(res, /^body\.zz_unknown is not a supported parameter$/, op);
  }
});

test('a body that is not a JSON object is a 400, on every JSON route', async () => {
  for (const { op, url } of jsonPosts) {
    assertBadRequest(await f.call({ method: 'POST', url, payload: '[1]', headers: { 'content-type': 'application/json' } }), /body/, `${op} with an array`);
    assertBadRequest(
      await f.call({ method: 'POST', url, payload: '{"a":', headers: { 'content-type': 'application/json' } }),
      /JSON/i,
      `${op} with broken JSON`,
    );
  }
});

test('a wrong type is a 400 naming the field and never coerced', async () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['/v1/devboxes', { name: 7 }, /^invalid body\.name: must be string/],
    ['/v1/devboxes', { launch_parameters: { keep_alive_time_seconds: '60' } }, /^invalid body\.launch_parameters\.keep_alive_time_seconds/],
    ['/v1/devboxes/missing_id/execute_async', { command: ['ls'] }, /^invalid body\.command: must be string/],
    ['/v1/devboxes/missing_id/wait_for_status', { statuses: ['nope'] }, /^invalid body\.statuses\.0/],
    ['/v1/restricted_keys', { scopes: [{ resource_type: 'RESOURCE_TYPE_DEVBOXES', access_level: 'ALL' }] }, /^invalid body\.scopes\.0\.access_level/],
  ];
  for (const [url, payload, pattern] of cases) assertBadRequest(await f.call({ method: 'POST', url, payload }), pattern, url);
});

test('query parameters are converted from text and checked', async () => {
  assert.equal((await f.call({ method: 'GET', url: '/v1/devboxes?limit=5' })).statusCode, 200);
  assertBadRequest(await f.call({ method: 'GET', url: '/v1/devboxes?limit=0' }), /^invalid querystring\.limit/, 'limit=0');
  assertBadRequest(await f.call({ method: 'GET', url: '/v1/devboxes?status=nope' }), /status/, 'status=nope');
  assertBadRequest(await f.call({ method: 'GET', url: `/v1/devboxes?search=${'a'.repeat(257)}` }), /^invalid querystring\.search/, 'a long search');
  assertBadRequest(await f.call({ method: 'GET', url: '/v1/devboxes?search=' }), /^invalid querystring\.search/, 'an empty search');
});
