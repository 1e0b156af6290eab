import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { newId } from '../../src/lib/ids.js';
import { createLogger } from '../../src/lib/logger.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureKeyFile, FileKeys, generateKey, readKeyFile, StaticKeys, type KeySource, type MasterKey } from '../../src/platform/sealing/master-key.js';
import { pruneKeys, rotateKey } from '../../src/resources/secrets/rotate-key.js';
import { SEALED } from '../../src/resources/index.js';
import { Sealer } from '../../src/platform/sealing/sealer.js';
import { aadOf, SecretService } from '../../src/resources/secrets/secret-service.js';
import { SqlSecretStore } from '../../src/resources/secrets/sql-secret-store.js';
import type { SecretRecord } from '../../src/resources/secrets/types.js';
import { account, devbox, openPostgres, openSqlite, rejectsWith, holdPostgres, type Backend } from './fixtures.js';

// The store contract for the secrets module (schema.ts) on both dialects: the one-name-per-account
// constraint under concurrent writers, bindings written in the devbox's transaction, conditional re-seals,
// and a key rotation that leaves every value readable and no row under the old key.
after(holdPostgres());

const log = createLogger('silent');
const b64 = (k: { key: Buffer }) => k.key.toString('base64');

const record = (accountId: string, name: string, over: Partial<SecretRecord> = {}): SecretRecord => ({
  id: newId('sec'),
  accountId,
  name,
  sealedValue: `v1.k.${name}`,
  keyId: 'k',
  createTimeMs: Date.now(),
  updateTimeMs: Date.now(),
  ...over,
});

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract, secrets: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('two servers creating one name at once: exactly one row, the other a 400', async () => {
      await ready;
      const acc = await account(db.a);
      for (let round = 0; round < 10; round++) {
        const name = `RACE_${round}`;
        const results = await Promise.allSettled([
          new SqlSecretStore(db.a.db).insert(record(acc.id, name)),
          new SqlSecretStore(db.b.db).insert(record(acc.id, name)),
        ]);
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
        const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
        assert.equal(failed.reason.code, 'invalid_request');
        assert.match(failed.reason.message, new RegExp(`a secret named ${name} already exists`));
      }
      const other = await account(db.a);
      await new SqlSecretStore(db.b.db).insert(record(other.id, 'RACE_0'));
      await rejectsWith(new SqlSecretStore(db.a.db).insert(record(acc.id, 'RACE_0')), 'invalid_request');
    });

    test('bindings commit or roll back with the devbox; deleting a secret deletes its bindings', async () => {
      await ready;
      const acc = await account(db.a);
      const s = record(acc.id, 'BOUND');
      await new SqlSecretStore(db.a.db).insert(s);
      const d = devbox(acc.id);
      await db.a.transaction(async (tx) => {
        await tx.devboxes.insert(d);
        await new SqlSecretStore(tx.db).bind(d.id, [
          { envName: 'API_KEY', secretId: s.id },
          { envName: 'OTHER', secretId: s.id },
        ]);
      });
      const bound = await new SqlSecretStore(db.b.db).boundSecrets(d.id);
      assert.deepEqual(
        bound.map((b) => [b.envName, b.secret.id]),
        [
          ['API_KEY', s.id],
          ['OTHER', s.id],
        ],
      );

      const lost = devbox(acc.id);
      // A create racing a delete: the resolver saw the secret, the delete committed before the box's
      // transaction: the same 400 as an unknown secret, naming the variable and the secret.
      await assert.rejects(
        db.a.transaction(async (tx) => {
          await tx.devboxes.insert(lost);
          await new SqlSecretStore(tx.db).bind(lost.id, [{ envName: 'X', secretId: 'sec_missing', ref: 'GONE' }]);
        }),
        (err: Error & { code?: string }) => err.code === 'invalid_request' && err.message === 'secrets.X: no secret named GONE',
      );
      assert.equal(await db.b.devboxes.getById(lost.id), undefined, 'a failing binding leaves no box');

      assert.equal((await new SqlSecretStore(db.b.db).delete(acc.id, 'BOUND'))?.id, s.id);
      assert.deepEqual(await new SqlSecretStore(db.a.db).boundSecrets(d.id), []);
      assert.equal(await new SqlSecretStore(db.a.db).delete(acc.id, 'BOUND'), undefined);
    });

    test('a re-seal applies only over the value it read; a concurrent update wins', async () => {
      await ready;
      const acc = await account(db.a);
      const s = record(acc.id, 'RESEAL');
      const store = new SqlSecretStore(db.a.db);
      await store.insert(s);
      await new SqlSecretStore(db.b.db).setValue(acc.id, s.id, 'v1.k.updated', 'k', Date.now());
      assert.equal(await store.reseal(s.id, s.sealedValue, 'v1.k2.stale', 'k2'), false);
      assert.equal((await store.getById(acc.id, s.id))?.sealedValue, 'v1.k.updated');
      assert.equal(await store.reseal(s.id, 'v1.k.updated', 'v1.k2.fresh', 'k2'), true);
      assert.equal((await store.getById(acc.id, s.id))?.keyId, 'k2');
    });

    test('a write sealed before a rotation and landing after it still opens after a restart; a prune re-seals it under the lock, then drops the key', async () => {
      await ready;
      await db.a.db.query('DELETE FROM devbox_secrets');
      await db.a.db.query('DELETE FROM secrets');
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-rotate-'));
      try {
        const acc = await account(db.a);
        const file = ensureKeyFile(dataDir);
        const server = new SecretService(db.a, new Sealer(new FileKeys(file)), log);
        const s = await server.create(acc.id, 'RACED', 'v1-value');
        // The server seals an update under the current key K0; its write waits (the rotation's lock)...
        const k0 = readKeyFile(file)[0]!;
        const sealed = new Sealer(new StaticKeys(k0)).seal('v2-value', aadOf(acc.id, s.id));
        // ...the rotation runs to its end...
        const r = await rotateKey(db.b, { sealed: SEALED, dataDir });
        assert.deepEqual(
          readKeyFile(file).map((k) => k.id),
          [r.keyId, k0.id],
          'the old key stays, retired',
        );
        // ...then the write lands.
        await new SqlSecretStore(db.a.db).setValue(acc.id, s.id, sealed, k0.id, Date.now());
        const restarted = () => new SecretService(db.b, new Sealer(new FileKeys(file)), log);
        assert.equal((await restarted().reveal(acc.id, 'RACED')).value, 'v2-value', 'a restarted server opens it');

        // A prune right after the rotation refuses: a writer may still hold a value sealed under K0.
        await assert.rejects(pruneKeys(db.b, { sealed: SEALED, dataDir }), /retired \d+ s ago/);
        const p = await pruneKeys(db.b, { sealed: SEALED, dataDir, retiredGraceMs: 0 });
        assert.deepEqual(p.dropped, [k0.id]);
        assert.equal(p.resealed, 1, 'the straggler was re-sealed');
        assert.deepEqual(
          readKeyFile(file).map((k) => k.id),
          [r.keyId],
        );
        assert.deepEqual([...(await new SqlSecretStore(db.a.db).keyIds()).keys()], [r.keyId]);
        assert.equal((await restarted().reveal(acc.id, 'RACED')).value, 'v2-value', 'still opens with the retired key gone');
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });

    test('a writer whose key was rotated away between its seal and its write seals again under the current key', async () => {
      await ready;
      const acc = await account(db.a);
      const k0 = generateKey();
      const k1 = generateKey();
      // current() answers K0 for the seal, K1 from then on: a rotation began while the write was on its way.
      let calls = 0;
      const flipping: KeySource = {
        origin: 'test',
        first: k0,
        current: (): MasterKey => (calls++ === 0 ? k0 : k1),
        find: (id) => [k0, k1].find((k) => k.id === id),
      };
      const s = await new SecretService(db.a, new Sealer(flipping), log).create(acc.id, 'FLIPPED', 'flip-value');
      const row = (await new SqlSecretStore(db.b.db).getById(acc.id, s.id))!;
      assert.equal(row.keyId, k1.id);
      assert.equal(new Sealer(new StaticKeys(k1)).open(row.sealedValue, aadOf(acc.id, s.id)), 'flip-value');
      calls = 0;
      await new SecretService(db.a, new Sealer(flipping), log).update(acc.id, 'FLIPPED', 'flip-2');
      assert.equal((await new SqlSecretStore(db.b.db).getById(acc.id, s.id))!.keyId, k1.id, 'an update too');
    });

    test('two rotations at once: the second is refused with a clear message; the key file keeps every key', async () => {
      await ready;
      await db.a.db.query('DELETE FROM devbox_secrets');
      await db.a.db.query('DELETE FROM secrets');
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-rotate-'));
      try {
        const file = ensureKeyFile(dataDir);
        const before = readKeyFile(file)[0]!;
        const results = await Promise.allSettled([rotateKey(db.a, { sealed: SEALED, dataDir }), rotateKey(db.b, { sealed: SEALED, dataDir })]);
        const done = results.filter((r) => r.status === 'fulfilled');
        const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        assert.equal(done.length, 1);
        assert.equal(refused.length, 1);
        assert.match(refused[0]!.reason.message, /another `devboxd secrets rotate-key`( \(pid \d+\))? is running on .*secret\.key .*wait for it to finish/);
        assert.deepEqual(
          readKeyFile(file).map((k) => k.id),
          [(done[0] as PromiseFulfilledResult<{ keyId: string }>).value.keyId, before.id],
        );
        // The lock goes with the rotation: the next one runs.
        await rotateKey(db.a, { sealed: SEALED, dataDir });
        assert.equal(readKeyFile(file).length, 3);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });

    test('rotation: every value still opens, under the new key only; a value that does not open changes nothing', async () => {
      await ready;
      await db.a.db.query('DELETE FROM devbox_secrets');
      await db.a.db.query('DELETE FROM secrets');
      const acc = await account(db.a);
      const oldKey = generateKey();
      const newKey = generateKey();
      const before = new SecretService(db.a, new Sealer(new StaticKeys(oldKey)), log);
      for (let i = 0; i < 7; i++) await before.create(acc.id, `ROT_${i}`, `value-${i}`);

      // DEVBOXD_SECRET_KEY mode: rotate to a given key.
      const r = await rotateKey(db.b, { sealed: SEALED, dataDir: '/nonexistent', secretKey: b64(oldKey), newKey: b64(newKey) });
      assert.equal(r.resealed, 7);
      assert.equal(r.keyId, newKey.id);
      const ids = await new SqlSecretStore(db.a.db).keyIds();
      assert.deepEqual([...ids.keys()], [newKey.id], 'no row names the old key');
      const after = new SecretService(db.a, new Sealer(new StaticKeys(newKey)), log);
      for (let i = 0; i < 7; i++) assert.equal((await after.reveal(acc.id, `ROT_${i}`)).value, `value-${i}`);
      await rejectsWith(before.reveal(acc.id, 'ROT_0'), 'unavailable');

      // A value under a key the command does not hold: it refuses, and nothing changed.
      const stray = generateKey();
      const strayService = new SecretService(db.a, new Sealer(new StaticKeys(stray)), log);
      await strayService.create(acc.id, 'STRAY', 'x');
      await assert.rejects(rotateKey(db.b, { sealed: SEALED, dataDir: '/nonexistent', secretKey: b64(newKey), newKey: b64(oldKey) }), /STRAY .* does not open/);
      const still = await new SqlSecretStore(db.a.db).keyIds();
      assert.equal(still.get(newKey.id), 7);
      assert.equal(still.get(stray.id), 1);

      // With the stray key as a previous key, rotating to the current key gathers it in.
      const again = await rotateKey(db.b, { sealed: SEALED, dataDir: '/nonexistent', secretKey: b64(newKey), previousKeys: [b64(stray)] });
      assert.equal(again.resealed, 1);
      assert.deepEqual([...(await new SqlSecretStore(db.a.db).keyIds()).keys()], [newKey.id]);
      assert.equal((await after.reveal(acc.id, 'STRAY')).value, 'x');
      // The AAD is the row: the stored text opens for its own row only.
      const row = (await new SqlSecretStore(db.a.db).getByName(acc.id, 'STRAY'))!;
      assert.throws(() => new Sealer(new StaticKeys(newKey)).open(row.sealedValue, aadOf(acc.id, 'sec_other')));
    });
  });
}
