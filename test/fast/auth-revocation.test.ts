import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { openStore } from '../../src/resources/core-store.js';
import { buildFastApp, type FastApp } from '../helpers/app.js';
import { DEVBOXD_BIN } from '../helpers/server.js';

/**
 * Keys found are kept between requests on SQLite (see AccountService.findKey). A revocation must still hold
 * from the very next request, wherever it was committed: this process's own connection, a second connection
 * in this process, or another process (the operator CLI).
 */
let f: FastApp;
before(async () => {
  f = await buildFastApp();
});
after(async () => f?.close());

/** A fresh standard key, used until it is kept (three requests), and a call that reports its status. */
async function warmKey() {
  const me = await f.call({ method: 'GET', url: '/v1/accounts/me' });
  const { key, secret } = await f.deps.accounts.createKey(me.json().id, { kind: 'standard', name: 'victim' });
  const status = async () => (await f.call({ method: 'GET', url: '/v1/accounts/me', key: secret })).statusCode;
  for (let i = 0; i < 3; i++) assert.equal(await status(), 200);
  return { id: key.id, status };
}

test('a kept key is not read again while nothing was committed', async () => {
  const { status } = await warmKey();
  const accounts = f.deps.store.accounts;
  const original = accounts.findKeyByHash;
  let reads = 0;
  accounts.findKeyByHash = (hash) => {
    reads++;
    return original.call(accounts, hash);
  };
  try {
    for (let i = 0; i < 5; i++) assert.equal(await status(), 200);
    assert.equal(reads, 0, 'the key was read from the database again');
  } finally {
    accounts.findKeyByHash = original;
  }
});

test('revoked through the API (this connection): the next request is 401', async () => {
  const { id, status } = await warmKey();
  assert.equal((await f.call({ method: 'POST', url: `/v1/apikeys/${id}/delete`, payload: {} })).statusCode, 200);
  assert.equal(await status(), 401);
});

test('revoked through a second connection of this process: the next request is 401', async () => {
  const { id, status } = await warmKey();
  const other = await openStore({ dataDir: f.dataDir });
  try {
    assert.equal(await other.accounts.revokeKey(id, Date.now()), true);
  } finally {
    await other.close();
  }
  assert.equal(await status(), 401);
});

test('revoked by another process (devboxd keys revoke): the next request is 401', async () => {
  const { id, status } = await warmKey();
  execFileSync(process.execPath, [DEVBOXD_BIN, 'keys', 'revoke', id], {
    env: { ...process.env, DEVBOXD_DATA_DIR: f.dataDir, DEVBOXD_DATABASE_URL: '' },
    stdio: 'pipe',
  });
  assert.equal(await status(), 401);
  // Other keys stay usable once their entries are read again.
  assert.equal((await f.call({ method: 'GET', url: '/v1/accounts/me' })).statusCode, 200);
});
