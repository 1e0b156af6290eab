import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import { GatewayBindings, hashToken } from '../../src/resources/gateway-configs/gateway-bindings.js';
import { GatewayConfigService } from '../../src/resources/gateway-configs/gateway-config-service.js';
import { resealGatewayTokens } from '../../src/resources/gateway-configs/reseal.js';
import { SqlGatewayStore } from '../../src/resources/gateway-configs/sql-gateway-store.js';
import type { SecretLookup } from '../../src/resources/gateway-configs/types.js';
import { generateKey, StaticKeys } from '../../src/platform/sealing/master-key.js';
import { Sealer } from '../../src/platform/sealing/sealer.js';
import { account, devbox, openPostgres, openSqlite, rejectsWith, holdPostgres, type Backend } from './fixtures.js';
import { loopbackGuard } from '../helpers/outbound.js';

// The store contract of the gateway module (schema.ts) on both dialects: one name per account under
// concurrent writers, list filters that take `%` and `_` literally, bindings written in the devbox's
// transaction (and none when it fails), token lookup by hash, conditional token swaps, ended boxes' tokens.
after(holdPostgres());

const secrets: SecretLookup = {
  resolve: async (_a, ref) => ({ id: ref.startsWith('sec_') ? ref : `sec_${ref}`, name: ref }),
  reveal: async (_a, ref) => ({ id: ref, name: ref, value: 'v' }),
};
const sealer = new Sealer(new StaticKeys(generateKey()));
const base = { endpoint: 'https://api.example.com', auth: { type: 'bearer' } };

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract, gateway configs: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());
    const configsOn = (which: 'a' | 'b') =>
      new GatewayConfigService(
        new SqlGatewayStore(db[which].db),
        () => secrets,
        () => sealer,
        loopbackGuard,
      );

    test('ids order bytewise: an id cursor pages the same on both dialects', async () => {
      await ready;
      const acc = await account(db.a);
      for (const id of ['gwc_B', 'gwc_a', 'gwc__']) {
        await db.a.db.query(
          "INSERT INTO gateway_configs (id, account_id, name, endpoint, auth_type, custom_headers, create_time_ms) VALUES (?, ?, ?, 'https://x', 'bearer', '[]', 0)",
          [id, acc.id, id],
        );
      }
      const { rows } = await db.a.db.query<{ id: string }>('SELECT id FROM gateway_configs WHERE account_id = ? ORDER BY id', [acc.id]);
      assert.deepEqual(
        rows.map((r) => r.id),
        ['gwc_B', 'gwc__', 'gwc_a'],
      );
      // Whatever the cluster's locale (the test cluster's may be C already), the columns say so themselves.
      if (db.a.db.dialect !== 'postgres') return;
      const cols = await db.a.db.query<{ table_name: string; collation_name: string | null }>(
        "SELECT table_name, collation_name FROM information_schema.columns WHERE column_name = 'id' AND table_name IN ('gateway_configs', 'gateway_bindings') ORDER BY table_name",
      );
      assert.deepEqual(
        cols.rows.map((r) => [r.table_name, r.collation_name]),
        [
          ['gateway_bindings', 'C'],
          ['gateway_configs', 'C'],
        ],
      );
    });

    test('two servers creating one name at once: exactly one config, the other a 400', async () => {
      await ready;
      const acc = await account(db.a);
      const results = await Promise.allSettled([
        configsOn('a').create(acc.id, { ...base, name: 'same' }),
        configsOn('b').create(acc.id, { ...base, name: 'same' }),
      ]);
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      await rejectsWith(Promise.reject(failed.reason), 'invalid_request', /already used/);
      const page = await configsOn('a').list(acc.id, { limit: 10, includeTotalCount: true }, { name: 'same' });
      assert.equal(page.totalCount, 1);
      // Every account also sees the system's configs (anthropic, openai), which none may change.
      const all = await configsOn('b').list(acc.id, { limit: 10, includeTotalCount: true }, {});
      assert.deepEqual(all.items.map((c) => c.name).sort(), ['anthropic', 'openai', 'same']);
      await rejectsWith(configsOn('a').delete(acc.id, 'gwc_openai'), 'invalid_request', /cannot be changed/);
    });

    test('list filters: name and search by part, case-insensitive, with % and _ literal; update and delete', async () => {
      const acc = await account(db.a);
      const svc = configsOn('a');
      const made = [];
      for (const name of ['Alpha_one', 'alphaXone', '100%-beta']) made.push(await svc.create(acc.id, { ...base, name }));
      const names = async (f: { name?: string; search?: string; id?: string }) =>
        (await svc.list(acc.id, { limit: 10, includeTotalCount: false }, f)).items.map((c) => c.name).sort();
      assert.deepEqual(await names({ name: 'ALPHA' }), ['Alpha_one', 'alphaXone'].sort());
      assert.deepEqual(await names({ name: 'a_o' }), ['Alpha_one'], '_ is literal');
      assert.deepEqual(await names({ search: '0%' }), ['100%-beta'], '% is literal');
      assert.deepEqual(await names({ search: made[1]!.id }), ['alphaXone']);
      assert.deepEqual(await names({ id: made[2]!.id }), ['100%-beta']);
      const updated = await configsOn('b').update(acc.id, made[0]!.id, { endpoint: 'http://127.0.0.1:1/x/', description: 'd' });
      assert.equal((await svc.get(acc.id, made[0]!.id)).endpoint, 'http://127.0.0.1:1/x');
      assert.equal(updated.description, 'd');
      await svc.delete(acc.id, made[0]!.id);
      await rejectsWith(svc.get(acc.id, made[0]!.id), 'not_found');
    });

    test("bindings: written in the devbox's transaction or not at all; found by token hash; swapped conditionally; gone with ended boxes", async () => {
      const acc = await account(db.a);
      const config = await configsOn('a').create(acc.id, { ...base, name: 'bound' });
      const bindings = new GatewayBindings(
        db.a,
        configsOn('a'),
        () => secrets,
        () => sealer,
        { baseUrl: 'http://127.0.0.1:1023' },
        createLogger('silent'),
      );
      const resolution = (await bindings.resolve(acc.id, { gateways: { LLM: { gateway: 'bound', secret: 'KEY' } } }))!;
      const store = new SqlGatewayStore(db.b.db);

      const failed = devbox(acc.id);
      await assert.rejects(
        db.a.transaction(async (tx) => {
          await tx.devboxes.insert(failed);
          await resolution.persist!(tx, failed);
          throw new Error('the create fails after the bindings');
        }),
      );
      assert.deepEqual(await store.bindingsOf(failed.id), []);

      const d = devbox(acc.id);
      await db.a.transaction(async (tx) => {
        await tx.devboxes.insert(d);
        await resolution.persist!(tx, d);
      });
      const [b] = await store.bindingsOf(d.id);
      assert.equal(b!.gatewayConfigId, config.id);
      assert.equal(b!.secretId, 'sec_KEY');
      const env = await bindings.environment(d);
      assert.equal(env.LLM_URL, `http://127.0.0.1:1023/gateway/${b!.id}`);
      assert.equal((await store.findBindingByTokenHash(hashToken(env.LLM!)))?.id, b!.id);
      assert.ok(!b!.tokenSealed.includes(env.LLM!));

      // Under a master key that cannot open the token (rotated away), the box gets a new token: the old one
      // no longer passes, and the new one is what every later execution gets.
      const otherRaw = generateKey();
      const otherKey = new Sealer(new StaticKeys(otherRaw));
      const rotated = new GatewayBindings(
        db.b,
        configsOn('b'),
        () => secrets,
        () => otherKey,
        { baseUrl: 'http://127.0.0.1:1023' },
        createLogger('silent'),
      );
      const fresh = await rotated.environment(d);
      assert.match(fresh.LLM!, /^gws_/);
      assert.notEqual(fresh.LLM, env.LLM);
      assert.equal(await store.findBindingByTokenHash(hashToken(env.LLM!)), undefined);
      assert.equal((await rotated.environment(d)).LLM, fresh.LLM);

      // secrets rotate-key re-seals tokens: under the new key alone the same token opens (no new one).
      const target = generateKey();
      assert.equal(await resealGatewayTokens(db.a.db, new Sealer(new StaticKeys(target, [otherRaw])), target.id), 1);
      const afterRotation = new GatewayBindings(
        db.b,
        configsOn('b'),
        () => secrets,
        () => new Sealer(new StaticKeys(target)),
        { baseUrl: 'http://127.0.0.1:1023' },
        createLogger('silent'),
      );
      assert.equal((await afterRotation.environment(d)).LLM, fresh.LLM);
      const [b2] = await store.bindingsOf(d.id);

      // A swap applies only over the hash it read: the second writer loses.
      assert.equal(await store.replaceToken(b!.id, b2!.tokenHash, 'h2', 's2'), true);
      assert.equal(await store.replaceToken(b!.id, b2!.tokenHash, 'h3', 's3'), false);
      assert.equal((await store.getBinding(b!.id))?.tokenHash, 'h2');

      const ended = devbox(acc.id, { status: 'shutdown' });
      await db.a.devboxes.insert(ended);
      await store.insertBinding({ ...b!, id: 'gwb_ended', devboxId: ended.id, tokenHash: 'h-ended' });
      assert.ok((await store.deleteBindingsOfEndedBoxes()) >= 1);
      // The create request's binding stays (gateway_specs), without its token.
      assert.deepEqual(
        (await store.bindingsOf(ended.id)).map((x) => [x.prefix, x.tokenHash, x.tokenSealed]),
        [[b!.prefix, 'ended:gwb_ended', '']],
      );
      assert.equal(await store.findBindingByTokenHash('h-ended'), undefined);
      assert.equal(await store.deleteBindingsOfEndedBoxes(), 0, 'done once');
      assert.equal(
        await resealGatewayTokens(db.a.db, new Sealer(new StaticKeys(generateKey())), 'k'),
        0,
        'ended bindings and texts that do not open are passed over',
      );
      assert.equal((await store.bindingsOf(d.id)).length, 1, 'a running box keeps its tokens');
    });
  });
}
