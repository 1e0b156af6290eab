import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import { ERRORS } from '../../src/platform/errors.js';
import { AuditLog, type AuditRecord, SqlAuditStore } from '../../src/resources/audit/index.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { cliOn } from '../helpers/cli.js';
import { ADMIN_KEY } from '../helpers/server.js';
import { until } from '../helpers/until.js';

/**
 * The audit trail over the real app and SQLite store: the rows of a create, a delete and refused calls (401,
 * 403, 404, 400) with who, what and the result, and no secret value or key in the table or the JSON-lines
 * file; reads not recorded; `devboxd audit` and its filters; the JSON-lines file followed across a rename;
 * the retention prune; a full queue dropping (counted, warned) without waiting; a database that cannot be
 * reached keeping the queue; close writing what is queued.
 */
let f: FastApp;
let trail: string;
const VALUE = 'audit-secret-VALUE-5d1c7e';
const BAD_KEY = 'ak_not-a-key-of-this-server-Q7wZ';

/** Called as the slow route's handler starts: the test's client leaves then, not after a guessed delay. */
let slowStarted: () => void = () => undefined;
before(async () => {
  f = await buildFastApp({ env: { DEVBOXD_AUDIT_LOG: 'audit/trail.jsonl' }, ready: false });
  // A state change that outlives its client (as an execute_sync may): recorded when its answer is ready.
  f.app.post('/v1/test-slow', { config: { resource: 'RESOURCE_TYPE_DEVBOXES' } }, async () => {
    slowStarted();
    await new Promise((r) => setTimeout(r, 150));
    return { id: 'slow_1' };
  });
  await f.app.ready();
  trail = path.join(f.dataDir, 'audit', 'trail.jsonl');
});
after(() => f.close());

async function rows(filter: Partial<Parameters<SqlAuditStore['list']>[0]> = {}) {
  await f.deps.audit.flush();
  return new SqlAuditStore(f.deps.store.db).list({ limit: 1000, ...filter });
}

/** `devboxd audit …` in this process, on this app's data dir; `json()` parses its lines. */
async function cli(...args: string[]) {
  const r = await cliOn(f.dataDir, 'audit', ...args);
  return {
    ...r,
    json: () =>
      r.out
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

test('a create, a delete and refused calls are recorded with who, what and the result; nothing secret is', async () => {
  const me = (await f.call({ method: 'GET', url: '/v1/accounts/me' })).json<{ id: string }>();
  const created = await f.call({ method: 'POST', url: '/v1/secrets', payload: { name: 'AUDITED', value: VALUE }, headers: { 'user-agent': 'audit-test/1' } });
  assert.equal(created.statusCode, 200, created.body);
  const secretId = created.json<{ id: string }>().id;
  assert.equal((await f.call({ method: 'POST', url: '/v1/secrets/AUDITED/delete' })).statusCode, 200);
  assert.equal((await f.call({ method: 'POST', url: '/v1/secrets', payload: { name: 'X', value: VALUE }, key: BAD_KEY })).statusCode, 401);
  const restricted = (await f.call({ method: 'POST', url: '/v1/restricted_keys', payload: { scopes: [] } })).json<{ id: string; key_secret: string }>();
  assert.equal((await f.call({ method: 'POST', url: '/v1/devboxes/dbx_nope/shutdown', key: restricted.key_secret })).statusCode, 403);
  assert.equal((await f.call({ method: 'POST', url: '/v1/devboxes/dbx_nope/shutdown' })).statusCode, 404);
  assert.equal((await f.call({ method: 'POST', url: '/v1/secrets', payload: { name: 'bad name', value: VALUE } })).statusCode, 400);
  // Reads are not recorded; neither are URLs no route matches.
  assert.equal((await f.call({ method: 'GET', url: '/v1/secrets' })).statusCode, 200);
  assert.equal((await f.call({ method: 'POST', url: '/v1/no-such-thing' })).statusCode, 404);

  const all = await rows();
  const by = (route: string, status: number) => all.find((r) => `${r.method} ${r.route}` === route && r.status === status);
  const create = by('POST /v1/secrets', 200);
  assert.ok(create, JSON.stringify(all));
  assert.deepEqual(
    [create.accountId, create.keyId !== null, create.resourceId, create.answerId, create.userAgent, create.ip, create.node],
    [me.id, true, null, secretId, 'audit-test/1', '127.0.0.1', f.deps.node],
  );
  assert.equal(by('POST /v1/secrets/:name/delete', 200)?.resourceId, 'AUDITED');
  const refused = by('POST /v1/secrets', 401)!;
  assert.deepEqual([refused.accountId, refused.keyId, refused.keyLast4], [null, null, BAD_KEY.slice(-4)]);
  const forbidden = by('POST /v1/devboxes/:id/shutdown', 403)!;
  assert.deepEqual([forbidden.accountId, forbidden.keyId, forbidden.resourceId], [me.id, restricted.id, 'dbx_nope']);
  assert.equal(by('POST /v1/devboxes/:id/shutdown', 404)?.keyId, create.keyId);
  assert.ok(by('POST /v1/secrets', 400));
  assert.equal(by('POST /v1/restricted_keys', 200)?.answerId, restricted.id);
  assert.ok(all.every((r) => r.method === 'POST' && !r.route.includes('no-such')));
  assert.equal(all.length, 7);

  const table = JSON.stringify(all);
  const lines = fs.readFileSync(trail, 'utf8');
  assert.equal(lines.trim().split('\n').length, 7);
  assert.equal((JSON.parse(lines.split('\n')[0]!) as { type: string }).type, 'devboxd.audit');
  for (const text of [table, lines]) for (const secret of [VALUE, BAD_KEY, ADMIN_KEY, restricted.key_secret]) assert.ok(!text.includes(secret), secret);
});

test('devboxd audit filters by account, key, route, resource, status and time; --json as shipped', async () => {
  const refused = await cli('--status', '4xx', '--json');
  assert.equal(refused.code, 0, refused.err);
  assert.deepEqual(
    refused
      .json()
      .map((r) => r.status)
      .sort(),
    [400, 401, 403, 404],
  );
  const byKey = (await cli('--status', '401', '--json')).json();
  assert.equal(byKey[0]!.key_last4, BAD_KEY.slice(-4));
  const mine = (await cli('--account', 'default', '--route', 'SHUTDOWN', '--json')).json();
  assert.deepEqual(mine.map((r) => [r.status, r.account_name]).sort(), [
    [403, 'default'],
    [404, 'default'],
  ]);
  const forbidden = mine.find((r) => r.status === 403)!;
  assert.deepEqual((await cli('--key', String(forbidden.key_id), '--json')).json(), [forbidden]);
  assert.equal((await cli('--resource', 'AUDITED', '--json')).json()[0]!.route, '/v1/secrets/:name/delete');
  assert.equal((await cli('--since', '1h', '--limit', '2', '--json')).json().length, 2);
  assert.equal((await cli('--until', '1h', '--json')).json().length, 0);
  assert.equal((await cli('--since', '2000-01-01', '--until', '2000-01-02', '--json')).out, '');
  const text = await cli('--route', 'POST /v1/secrets', '--status', '200');
  assert.match(text.out, /^TIME\tSTATUS\tMETHOD\tROUTE\tRESOURCE\tACCOUNT\tKEY\tIP\tMS\n/);
  assert.match(text.out, /\t200\tPOST\t\/v1\/secrets\t-> sec_\w+\tdefault\tkey_\w+\t127\.0\.0\.1\t\d+\n/);
  for (const [args, message] of [
    [['--since', 'yesterday'], /--since takes a duration/],
    [['--status', '4x'], /--status takes a status/],
    [['--limit', '0'], /--limit takes an integer/],
  ] as const) {
    const r = await cli(...args);
    assert.equal(r.code, 2, r.out);
    assert.match(r.err, message);
    assert.match(r.err, /usage: devboxd audit/);
  }
  const nobody = await cli('--account', 'nobody');
  assert.deepEqual([nobody.code, nobody.err], [1, 'devboxd audit: no account named or with id nobody\n']);
});

test('the JSON-lines file is followed across a rename (logrotate), and /metrics counts the writes', async () => {
  fs.renameSync(trail, `${trail}.1`);
  assert.equal((await f.call({ method: 'POST', url: '/v1/secrets/GONE/delete' })).statusCode, 404);
  await f.deps.audit.flush();
  assert.equal(fs.readFileSync(`${trail}.1`, 'utf8').trim().split('\n').length, 7);
  assert.match(fs.readFileSync(trail, 'utf8'), /^\{"type":"devboxd.audit".*"route":"\/v1\/secrets\/:name\/delete","resource_id":"GONE".*\n$/);
  const metrics = (await f.call({ method: 'GET', url: '/metrics' })).body;
  assert.match(metrics, /^devboxd_audit_written_total 8$/m);
  assert.match(metrics, /^devboxd_audit_dropped_total\{reason="queue_full"\} 0$/m);
  assert.match(metrics, /^devboxd_audit_queue_length 0$/m);
});

test('a request whose client left before its answer is recorded with the answer it was given', async () => {
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = f.app.server.address() as AddressInfo;
  const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/test-slow', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  req.on('error', () => undefined);
  // The client leaves once the handler runs (a fixed 30 ms lost the race on a loaded machine: the request had
  // not reached its route, so nothing was there to record).
  const started = new Promise<void>((resolve) => (slowStarted = resolve));
  req.end();
  await started;
  req.destroy();
  const row = await until('the row of the abandoned request', async () => (await rows({ route: 'test-slow' }))[0], 5_000, 50);
  assert.deepEqual([row.status, row.answerId], [200, 'slow_1']);
  assert.ok(row.durationMs >= 140, String(row.durationMs));
});

const record = (timeMs: number, n = 0): AuditRecord => ({
  timeMs,
  node: 'n',
  accountId: null,
  keyId: null,
  keyLast4: null,
  method: 'POST',
  route: `/v1/test/${n}`,
  resourceId: null,
  answerId: null,
  status: 200,
  durationMs: 1,
  ip: null,
  forwardedFor: null,
  peer: null,
  userAgent: null,
  reqId: null,
});

test('rows past DEVBOXD_AUDIT_RETENTION_DAYS are pruned in batches; newer ones stay', async () => {
  const store = new SqlAuditStore(f.deps.store.db);
  const now = Date.now();
  const day = 86_400_000;
  await store.insert(Array.from({ length: 1_205 }, (_, i) => record(now - 91 * day - i)));
  await store.insert([record(now - 89 * day, 1)]);
  assert.equal(await f.deps.audit.prune(now), 1_205);
  assert.equal((await rows({ untilMs: now - 30 * day })).length, 1);
});

test('a full queue drops records (counted, warned) without waiting; an unreachable database keeps them; close writes them', async () => {
  const warnings: string[] = [];
  const log = createLogger('warn', { write: (l: string) => void warnings.push(l) });
  const real = new SqlAuditStore(f.deps.store.db);
  let down = true;
  const store = {
    insert: (r: readonly AuditRecord[]) => (down ? Promise.reject(ERRORS.unavailable('the database is unavailable: down')) : real.insert(r)),
  } as SqlAuditStore;
  const audit = new AuditLog({ store, sink: undefined, config: { retentionDays: 90, shipping: { kind: 'none' }, queueMax: 10 }, log });
  const t = Date.now() + 1_000_000;
  for (let i = 0; i < 15; i++) audit.record(record(t, i));
  assert.deepEqual([audit.queued, audit.stats.dropped.queue_full], [10, 5]);
  assert.equal(warnings.filter((l) => l.includes('the queue is full')).length, 1);
  await audit.flush();
  assert.deepEqual([audit.queued, audit.stats.written], [10, 0]);
  assert.ok(warnings.some((l) => l.includes('the database is unavailable')));
  down = false;
  await audit.close();
  assert.equal(audit.stats.written, 10);
  assert.equal((await rows({ sinceMs: t })).length, 10);
  audit.record(record(t, 99));
  assert.equal(audit.queued, 0);
});
