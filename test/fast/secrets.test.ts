import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SpawnSpec } from '../../src/runtime/driver.js';
import { ensureKeyFile, keyFileProblems, openKeySource } from '../../src/platform/sealing/master-key.js';
import { buildFastApp, createAccount, type FastApp } from '../helpers/app.js';
import { DEVBOXD_BIN } from '../helpers/server.js';

/**
 * Secrets through the HTTP API (inject): CRUD, the name rule, duplicates, another account, and the value
 * never in any answer, error answers included. Every response this file receives is checked for the values.
 */
let f: FastApp;
let keyB: string;
const VALUE = 'sv-7f3a9c1e-never-shown';
const seen: string[] = [];

async function call(opts: Parameters<FastApp['call']>[0]) {
  const res = await f.call(opts);
  seen.push(res.body);
  return res;
}
async function ok<T = Record<string, unknown>>(opts: Parameters<FastApp['call']>[0]): Promise<T> {
  const res = await call(opts);
  assert.equal(res.statusCode, 200, `${opts.method} ${opts.url}: ${res.body}`);
  return res.json() as T;
}
function bad(res: { statusCode: number; body: string }, status: number, pattern: RegExp) {
  assert.equal(res.statusCode, status, res.body);
  assert.match((JSON.parse(res.body) as { message: string }).message, pattern);
}

before(async () => {
  f = await buildFastApp();
  keyB = await createAccount(f, 'team-b');
});
after(async () => {
  for (const body of seen) assert.ok(!body.includes(VALUE) && !body.includes('sv-other'), `a response showed a value: ${body.slice(0, 200)}`);
  await f?.close();
});

describe('CRUD', () => {
  test('create, retrieve, list, update, delete: views carry id, name and times, never the value', async () => {
    const created = await ok<{ id: string; name: string; create_time_ms: number; update_time_ms: number }>({
      method: 'POST',
      url: '/v1/secrets',
      payload: { name: 'DB_PASS', value: VALUE },
    });
    assert.match(created.id, /^sec_/);
    assert.deepEqual(Object.keys(created).sort(), ['create_time_ms', 'id', 'name', 'update_time_ms']);
    assert.equal(created.name, 'DB_PASS');
    assert.equal(created.create_time_ms, created.update_time_ms);

    assert.deepEqual(await ok({ method: 'GET', url: '/v1/secrets/DB_PASS' }), created);
    const list = await ok<{ secrets: { id: string }[]; has_more: boolean; total_count: number }>({ method: 'GET', url: '/v1/secrets?limit=10' });
    assert.deepEqual(list.secrets, [created]);
    assert.equal(list.has_more, false);

    await new Promise((r) => setTimeout(r, 5));
    const updated = await ok<typeof created>({ method: 'POST', url: '/v1/secrets/DB_PASS', payload: { value: `${VALUE}-2` } });
    assert.equal(updated.id, created.id);
    assert.ok(updated.update_time_ms > created.update_time_ms);
    assert.equal(updated.create_time_ms, created.create_time_ms);
    const account = (await f.deps.store.accounts.findAccountByName('default'))!.id;
    assert.equal((await f.deps.secrets.reveal(account, 'DB_PASS')).value, `${VALUE}-2`);
    assert.equal((await f.deps.secrets.reveal(account, created.id)).value, `${VALUE}-2`, 'reveal takes the id too');

    const deleted = await ok<typeof created>({ method: 'POST', url: '/v1/secrets/DB_PASS/delete' });
    assert.equal(deleted.id, created.id);
    bad(await call({ method: 'GET', url: '/v1/secrets/DB_PASS' }), 404, /secret DB_PASS not found/);
    bad(await call({ method: 'POST', url: '/v1/secrets/DB_PASS', payload: { value: 'x' } }), 404, /not found/);
    bad(await call({ method: 'POST', url: '/v1/secrets/DB_PASS/delete' }), 404, /not found/);
    assert.equal(await f.deps.secrets.resolve(account, created.id), undefined);
  });

  test('list pages with limit', async () => {
    for (const n of ['PAGE_A', 'PAGE_B', 'PAGE_C']) await ok({ method: 'POST', url: '/v1/secrets', payload: { name: n, value: VALUE } });
    const first = await ok<{ secrets: { name: string }[]; has_more: boolean; total_count: number }>({ method: 'GET', url: '/v1/secrets?limit=2' });
    assert.equal(first.secrets.length, 2);
    assert.equal(first.has_more, true);
    assert.equal(first.total_count, 3);
    bad(await call({ method: 'GET', url: '/v1/secrets?limit=0' }), 400, /limit/);
  });
});

describe('validation', () => {
  test('a name that is not an environment variable name is a 400 naming the rule', async () => {
    for (const name of ['1ABC', 'A-B', 'A B', 'A.B', 'ÄPFEL', '$X']) {
      bad(
        await call({ method: 'POST', url: '/v1/secrets', payload: { name, value: VALUE } }),
        400,
        /letters, digits and underscores only, not starting with a digit/,
      );
    }
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: '', value: VALUE } }), 400, /name is required/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'A'.repeat(257), value: VALUE } }), 400, /name/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { value: VALUE } }), 400, /name/);
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: '_lower_case_9', value: VALUE } });
  });

  test('a value is required, bounded, without NUL; no error shows any of it', async () => {
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'NO_VALUE' } }), 400, /value/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'EMPTY', value: '' } }), 400, /value is required/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'NUL', value: `${VALUE}\u0000x` } }), 400, /NUL/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'BIG', value: VALUE.repeat(3000) } }), 400, /larger than 65536 bytes/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'N', value: [VALUE] } }), 400, /body\.value/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'bad-name', value: VALUE } }), 400, /name/);
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'EXTRA', value: VALUE, other: VALUE } }), 400, /body\.other/);
    bad(
      await call({ method: 'POST', url: '/v1/secrets', payload: `{"name":"BROKEN","value":"${VALUE}"`, headers: { 'content-type': 'application/json' } }),
      400,
      /JSON/i,
    );
    // V8's own parse messages quote the text around the error; the API's does not.
    bad(
      await call({ method: 'POST', url: '/v1/secrets', payload: `{"name":"RAW","value": ${VALUE}}`, headers: { 'content-type': 'application/json' } }),
      400,
      /JSON/i,
    );
    bad(await call({ method: 'POST', url: '/v1/secrets/RAW', payload: `{"value": ${VALUE}}`, headers: { 'content-type': 'application/json' } }), 400, /JSON/i);
    bad(await call({ method: 'POST', url: '/v1/secrets/NOPE', payload: { value: VALUE } }), 404, /NOPE/);
    const sizes = await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'BIG', value: 'x'.repeat(65_537) } });
    assert.equal(sizes.statusCode, 400);
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'MAX', value: 'é'.repeat(32_768) } });
  });

  test('a name taken in the account is a 400; another account may use it', async () => {
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'TAKEN', value: VALUE } });
    bad(await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'TAKEN', value: 'sv-other' } }), 400, /a secret named TAKEN already exists/);
    const results = await Promise.all([0, 1, 2, 3].map(() => call({ method: 'POST', url: '/v1/secrets', payload: { name: 'RACED', value: VALUE } })));
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 400, 400, 400], 'concurrent creates: exactly one wins');
    await ok({ method: 'POST', url: '/v1/secrets', key: keyB, payload: { name: 'TAKEN', value: 'sv-other' } });
  });
});

describe('accounts', () => {
  test("another account neither sees nor changes A's secrets, nor binds them to its boxes", async () => {
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'A_ONLY', value: VALUE } });
    const aId = (await ok<{ id: string }>({ method: 'GET', url: '/v1/secrets/A_ONLY' })).id;
    bad(await call({ method: 'GET', url: '/v1/secrets/A_ONLY', key: keyB }), 404, /not found/);
    bad(await call({ method: 'POST', url: '/v1/secrets/A_ONLY', key: keyB, payload: { value: 'sv-other' } }), 404, /not found/);
    bad(await call({ method: 'POST', url: '/v1/secrets/A_ONLY/delete', key: keyB }), 404, /not found/);
    const listB = await ok<{ secrets: { name: string }[] }>({ method: 'GET', url: '/v1/secrets?limit=100', key: keyB });
    assert.ok(!listB.secrets.some((s) => s.name === 'A_ONLY'));
    for (const ref of ['A_ONLY', aId]) {
      bad(await call({ method: 'POST', url: '/v1/devboxes', key: keyB, payload: { secrets: { X: ref } } }), 400, /secrets\.X: no secret named/);
    }
    await ok({ method: 'GET', url: '/v1/secrets/A_ONLY' });
  });

  test('a restricted key needs account read to list and write to change', async () => {
    const scopes = (level: string) => [{ resource_type: 'RESOURCE_TYPE_ACCOUNT', access_level: level }];
    const reader = (await ok<{ key_secret: string }>({ method: 'POST', url: '/v1/restricted_keys', payload: { scopes: scopes('ACCESS_LEVEL_READ') } }))
      .key_secret;
    await ok({ method: 'GET', url: '/v1/secrets', key: reader });
    bad(await call({ method: 'POST', url: '/v1/secrets', key: reader, payload: { name: 'BY_READER', value: VALUE } }), 403, /RESOURCE_TYPE_ACCOUNT/);
    const none = (await ok<{ key_secret: string }>({ method: 'POST', url: '/v1/restricted_keys', payload: { scopes: [] } })).key_secret;
    bad(await call({ method: 'GET', url: '/v1/secrets', key: none }), 403, /RESOURCE_TYPE_ACCOUNT/);
  });
});

describe('devboxes', () => {
  test('bound secrets reach every process, are left out of named-shell state, follow updates and deletes, and never the box record', async () => {
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'BOX_KEY', value: VALUE } });
    const spawned: SpawnSpec[] = [];
    f.runtime.run = (spec) => (spawned.push(spec), {});
    bad(await call({ method: 'POST', url: '/v1/devboxes', payload: { secrets: { API_KEY: 'NO_SUCH' } } }), 400, /secrets\.API_KEY: no secret named NO_SUCH/);
    bad(
      await call({ method: 'POST', url: '/v1/devboxes', payload: { secrets: { API_KEY: 'BOX_KEY' }, environment_variables: { API_KEY: 'x' } } }),
      400,
      /API_KEY is also set in environment_variables/,
    );
    const box = await ok<{ id: string; status: string }>({
      method: 'POST',
      url: '/v1/devboxes/create_and_await_running',
      payload: { secrets: { API_KEY: 'BOX_KEY' }, environment_variables: { PLAIN: 'p' }, launch_parameters: { launch_commands: ['true'] } },
    });
    assert.equal(box.status, 'running');
    assert.equal(spawned[0]?.env?.API_KEY, VALUE, 'the launch command gets it');
    assert.equal(spawned[0]?.env?.PLAIN, 'p');

    const run = async (payload: Record<string, unknown>) => {
      spawned.length = 0;
      await ok({ method: 'POST', url: `/v1/devboxes/${box.id}/execute_sync`, payload });
      return spawned.at(-1)!;
    };
    assert.equal((await run({ command: 'env' })).env?.API_KEY, VALUE);
    const shell = await run({ command: 'env', shell_name: 'sh1' });
    assert.equal(shell.env?.API_KEY, VALUE);
    assert.deepEqual(shell.argv.slice(-1), ['API_KEY'], 'the named shell is told not to save it');
    assert.ok(!shell.argv.includes('PLAIN'), "the box's own variables are saved as before");

    await ok({ method: 'POST', url: '/v1/secrets/BOX_KEY', payload: { value: `${VALUE}-new` } });
    assert.equal((await run({ command: 'env' })).env?.API_KEY, `${VALUE}-new`, 'an update reaches the next process');
    await ok({ method: 'POST', url: '/v1/secrets/BOX_KEY/delete' });
    assert.equal((await run({ command: 'env' })).env?.API_KEY, undefined, 'a deleted secret is gone from the next process');

    const view = await call({ method: 'GET', url: `/v1/devboxes/${box.id}` });
    assert.ok(!view.body.includes(VALUE));
    const rows = await f.deps.store.db.query<Record<string, unknown>>('SELECT * FROM devboxes WHERE id = ?', [box.id]);
    assert.ok(!JSON.stringify(rows.rows).includes(VALUE), 'the devbox row holds no value');
  });
});

describe('a bound secret the command cannot get', () => {
  const started = async (boxId: string, spawned: SpawnSpec[]) => {
    spawned.length = 0;
    await ok({ method: 'POST', url: `/v1/devboxes/${boxId}/execute_sync`, payload: { command: 'echo $API_KEY' } });
    return spawned.at(-1)!;
  };

  test('a value that does not open: the command is not started; a stand-in names the variable and the secret on stderr and exits 126', async () => {
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'UNOPENABLE', value: VALUE } });
    const spawned: SpawnSpec[] = [];
    f.runtime.run = (spec) => (spawned.push(spec), {});
    const box = await ok<{ id: string }>({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: { secrets: { API_KEY: 'UNOPENABLE' } } });
    // Sealed under a key this server does not hold (a lost key, a server on another key).
    await f.deps.store.db.query(
      "UPDATE secrets SET sealed_value = 'v1.00000000deadbeef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', key_id = '00000000deadbeef' WHERE name = 'UNOPENABLE'",
    );
    const spec = await started(box.id, spawned);
    assert.equal(spec.argv[0], 'sh');
    assert.ok(!spec.argv.includes('echo $API_KEY'), 'the command itself does not run');
    assert.match(
      spec.argv.at(-1)!,
      /^secrets\.API_KEY: secret UNOPENABLE cannot be decrypted by this server: sealed under key 00000000deadbeef.*; the command was not started$/,
    );
    assert.equal(spec.env?.API_KEY, undefined);
    await ok({ method: 'POST', url: '/v1/secrets/UNOPENABLE/delete' });
    assert.equal((await started(box.id, spawned)).argv.at(-1), 'echo $API_KEY', 'a deleted binding no longer stops it');
  });

  test('a suspend command whose secret does not open is skipped and logged: the suspend goes on', async () => {
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'UNOPENABLE_2', value: VALUE } });
    const spawned: SpawnSpec[] = [];
    f.runtime.run = (spec) => (spawned.push(spec), {});
    const box = await ok<{ id: string }>({
      method: 'POST',
      url: '/v1/devboxes/create_and_await_running',
      payload: { secrets: { API_KEY: 'UNOPENABLE_2' }, launch_parameters: { lifecycle: { lifecycle_hooks: { suspend_commands: ['echo on-suspend'] } } } },
    });
    await f.deps.store.db.query(
      "UPDATE secrets SET sealed_value = 'v1.00000000deadbeef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', key_id = '00000000deadbeef' WHERE name = 'UNOPENABLE_2'",
    );
    spawned.length = 0;
    await ok({ method: 'POST', url: `/v1/devboxes/${box.id}/suspend` });
    let status = '';
    for (let i = 0; i < 200 && status !== 'suspended'; i++) {
      status = (await ok<{ status: string }>({ method: 'GET', url: `/v1/devboxes/${box.id}` })).status;
      if (status !== 'suspended') await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(status, 'suspended');
    assert.ok(!spawned.some((s) => s.argv.includes('echo on-suspend')), 'the suspend command did not run');
    await ok({ method: 'POST', url: '/v1/secrets/UNOPENABLE_2/delete' });
  });

  test('values over the budget after updates: the command is not started, the reason names the budget', async () => {
    const spawned: SpawnSpec[] = [];
    f.runtime.run = (spec) => (spawned.push(spec), {});
    const secrets: Record<string, string> = {};
    for (let i = 0; i < 17; i++) {
      await ok({ method: 'POST', url: '/v1/secrets', payload: { name: `BIG_${i}`, value: 'a'.repeat(60_000) } });
      secrets[`BIG_${i}`] = `BIG_${i}`;
    }
    const box = await ok<{ id: string }>({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: { secrets } });
    assert.equal((await started(box.id, spawned)).argv.at(-1), 'echo $API_KEY', 'within the budget it runs');
    for (let i = 0; i < 17; i++) await ok({ method: 'POST', url: `/v1/secrets/BIG_${i}`, payload: { value: 'b'.repeat(65_536) } });
    const spec = await started(box.id, spawned);
    assert.equal(spec.argv[0], 'sh');
    assert.match(spec.argv.at(-1)!, /^secrets: the values bound to this box are 1114112 bytes together, more than 1048576 .*the command was not started/);
    assert.ok(!spec.argv.join(' ').includes('bbbb'));
    for (let i = 0; i < 17; i++) await ok({ method: 'POST', url: `/v1/secrets/BIG_${i}/delete` });
  });
});

describe('at rest', () => {
  test('the database holds values sealed, bound to their row; the key file is 0600', async () => {
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'ROW_ONE', value: VALUE } });
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'ROW_TWO', value: 'sv-other' } });
    const { rows } = await f.deps.store.db.query<{ id: string; name: string; sealed_value: string; key_id: string }>(
      "SELECT * FROM secrets WHERE name IN ('ROW_ONE', 'ROW_TWO') ORDER BY name",
    );
    assert.ok(!JSON.stringify(rows).includes(VALUE) && !JSON.stringify(rows).includes('sv-other'));
    assert.match(rows[0]!.sealed_value, new RegExp(`^v1\\.${rows[0]!.key_id}\\.`));
    assert.equal(fs.statSync(path.join(f.dataDir, 'secret.key')).mode & 0o777, 0o600);
    // A sealed value copied onto another row does not open there.
    await f.deps.store.db.query('UPDATE secrets SET sealed_value = ? WHERE id = ?', [rows[0]!.sealed_value, rows[1]!.id]);
    const account = (await f.deps.store.accounts.findAccountByName('default'))!.id;
    await assert.rejects(f.deps.secrets.reveal(account, 'ROW_TWO'), (err: Error) => /cannot be decrypted/.test(err.message) && !err.message.includes(VALUE));
    assert.equal((await f.deps.secrets.reveal(account, 'ROW_ONE')).value, VALUE);
    await ok({ method: 'POST', url: '/v1/secrets/ROW_TWO/delete' });
  });

  test('rotate-key beside the running server: values still open, no row names the old key, which stays retired until --prune', async () => {
    const account = (await f.deps.store.accounts.findAccountByName('default'))!.id;
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'ROTATED', value: VALUE } });
    const keyFile = path.join(f.dataDir, 'secret.key');
    const oldKey = fs.readFileSync(keyFile, 'utf8');
    const before = await f.deps.store.db.query<{ key_id: string }>('SELECT DISTINCT key_id FROM secrets');
    assert.equal(before.rows.length, 1);
    const cli = (...args: string[]) =>
      execFileSync(process.execPath, [DEVBOXD_BIN, 'secrets', 'rotate-key', ...args], { env: { ...process.env, DEVBOXD_DATA_DIR: f.dataDir } }).toString();
    const out = cli();
    assert.match(out, /re-encrypted \d+ secrets/);
    assert.match(out, /retired keys .* stay in .*--prune/);
    assert.ok(!out.includes(oldKey.trim()));
    const after = await f.deps.store.db.query<{ key_id: string }>('SELECT DISTINCT key_id FROM secrets');
    assert.equal(after.rows.length, 1);
    assert.notEqual(after.rows[0]!.key_id, before.rows[0]!.key_id, 'no row names the old key');
    const lines = fs.readFileSync(keyFile, 'utf8').trim().split('\n');
    assert.equal(lines.length, 2, 'the new key first, the old one retired');
    assert.equal(`${lines[1]}\n`, oldKey);
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
    assert.equal((await f.deps.secrets.reveal(account, 'ROTATED')).value, VALUE, 'the running server re-reads the key file');
    // New values are sealed under the new key.
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'AFTER_ROTATION', value: VALUE } });
    const ids = await f.deps.store.db.query<{ key_id: string }>('SELECT DISTINCT key_id FROM secrets');
    assert.deepEqual(
      ids.rows.map((r) => r.key_id),
      [after.rows[0]!.key_id],
    );

    // A prune at once is refused (a writer may still hold a value sealed under the old key); a minute later it drops it.
    assert.throws(
      () => cli('--prune'),
      (err: Error & { stderr: Buffer }) => /retired \d+ s ago/.test(err.stderr.toString()),
    );
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(keyFile, old, old);
    assert.match(cli('--prune'), /dropped [0-9a-f]{16}/);
    assert.deepEqual(fs.readFileSync(keyFile, 'utf8').trim().split('\n'), [lines[0]]);
    assert.equal((await f.deps.secrets.reveal(account, 'ROTATED')).value, VALUE);
  });

  test('the key file unreadable: sealing is a 503 naming the file, a POST with x-request-id is not a 500, the keys read stay for opening', async () => {
    const account = (await f.deps.store.accounts.findAccountByName('default'))!.id;
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'BEFORE_LOSS', value: VALUE } });
    const keyFile = path.join(f.dataDir, 'secret.key');
    const aside = `${keyFile}.aside`;
    fs.renameSync(keyFile, aside);
    try {
      bad(
        await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'DURING_LOSS', value: VALUE }, headers: { 'x-request-id': 'req-loss-1' } }),
        503,
        new RegExp(`${keyFile} cannot be read \\(ENOENT\\)`),
      );
      assert.equal((await f.deps.secrets.reveal(account, 'BEFORE_LOSS')).value, VALUE, 'the keys read before still open');
      // A write that seals nothing still runs: the request fingerprint does not read the key file.
      const other = await call({ method: 'POST', url: '/v1/secrets/BEFORE_LOSS/delete', headers: { 'x-request-id': 'req-loss-2' } });
      assert.equal(other.statusCode, 200, other.body);
    } finally {
      fs.renameSync(aside, keyFile);
    }
    await ok({ method: 'POST', url: '/v1/secrets', payload: { name: 'AFTER_LOSS', value: VALUE } });
    assert.equal((await f.deps.secrets.reveal(account, 'AFTER_LOSS')).value, VALUE);
  });

  test('a key file others may read, or owned by another user, is reported', async () => {
    const dir = fs.mkdtempSync(path.join(f.dataDir, 'keycheck-'));
    const file = ensureKeyFile(dir);
    assert.deepEqual(keyFileProblems(file), []);
    fs.chmodSync(file, 0o644);
    const warned: string[] = [];
    openKeySource({ dataDir: dir, warn: (m) => warned.push(m) });
    assert.equal(warned.length, 1);
    assert.match(warned[0]!, new RegExp(`${file} is not protected: its mode is 0644: other users may read it \\(chmod 600`));
    fs.chmodSync(file, 0o600);
    if (process.getuid?.() === 0) {
      fs.chownSync(file, 65534, 65534);
      assert.match(keyFileProblems(file).join(), /owned by uid 65534, not by the server's uid 0/);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('x-request-id claims', () => {
  test('the database keeps a keyed digest of a request body, never a plain hash a weak value could be guessed from', async () => {
    const weak = 'hunter2';
    const payload = { name: 'WEAK_ONE', value: weak };
    const headers = { 'x-request-id': 'req-weak-secret' };
    const first = await ok({ method: 'POST', url: '/v1/secrets', payload, headers });
    assert.deepEqual(await ok({ method: 'POST', url: '/v1/secrets', payload, headers }), first, 'a retry replays');
    const { rows } = await f.deps.store.db.query<{ request_hash: string }>('SELECT request_hash FROM idempotency WHERE request_id = ?', ['req-weak-secret']);
    assert.equal(rows.length, 1);
    const plain = createHash('sha256').update(JSON.stringify(payload)).digest('hex');
    assert.notEqual(rows[0]!.request_hash, plain);
    assert.ok(!rows[0]!.request_hash.includes(weak));
    const other = await call({ method: 'POST', url: '/v1/secrets', payload: { name: 'WEAK_ONE', value: 'hunter3' }, headers });
    assert.equal(other.statusCode, 422, 'another body under the same request id is still told apart');
  });

  test('a rotation does not change the fingerprint: a retry in flight across it replays', async () => {
    const payload = { name: 'ACROSS_ROTATION', value: VALUE };
    const headers = { 'x-request-id': 'req-across-rotation' };
    const first = await ok({ method: 'POST', url: '/v1/secrets', payload, headers });
    execFileSync(process.execPath, [DEVBOXD_BIN, 'secrets', 'rotate-key'], { env: { ...process.env, DEVBOXD_DATA_DIR: f.dataDir } });
    const retry = await call({ method: 'POST', url: '/v1/secrets', payload, headers });
    assert.equal(retry.statusCode, 200, retry.body);
    assert.equal(retry.headers['x-idempotent-replay'], 'true');
    assert.deepEqual(retry.json(), first);
  });
});
