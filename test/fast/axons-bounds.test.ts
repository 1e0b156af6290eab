import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { BYTE_BOUNDS_ENV, checkByteBounds } from './axon-byte-bounds.js';

/** An account's axons are bounded (each keeps events and a SQL database on disk), and so are their events' bytes. */
let f: FastApp;
before(async () => {
  f = await buildFastApp({ env: { DEVBOXD_AXON_ACCOUNT_MAX: '2', ...BYTE_BOUNDS_ENV } });
});
after(() => f?.close());

test('a create past DEVBOXD_AXON_ACCOUNT_MAX axons is a 403 naming it; a deleted axon frees its place', async () => {
  const ids: string[] = [];
  for (const name of ['a', 'b']) {
    const res = await f.call({ method: 'POST', url: '/v1/axons', payload: { name } });
    assert.equal(res.statusCode, 200, res.body);
    ids.push((res.json() as { id: string }).id);
  }
  const refused = await f.call({ method: 'POST', url: '/v1/axons', payload: { name: 'c' } });
  assert.equal(refused.statusCode, 403, refused.body);
  assert.match((refused.json() as { message: string }).message, /DEVBOXD_AXON_ACCOUNT_MAX/);
  assert.equal((await f.call({ method: 'DELETE', url: `/v1/axons/${ids[0]}` })).statusCode, 200);
  assert.equal((await f.call({ method: 'POST', url: '/v1/axons', payload: { name: 'c' } })).statusCode, 200);
});

test('event payload is bounded by bytes per axon (oldest dropped) and per account (403, nothing lost)', () => checkByteBounds(f));
