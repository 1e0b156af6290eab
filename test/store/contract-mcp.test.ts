import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { McpConfigService } from '../../src/resources/mcp-configs/mcp-config-service.js';
import { McpTokens } from '../../src/resources/mcp-configs/mcp-tokens.js';
import { resealMcp } from '../../src/resources/mcp-configs/reseal.js';
import { SqlMcpTokenStore } from '../../src/resources/mcp-configs/sql-mcp-token-store.js';
import type { SecretReader } from '../../src/resources/mcp-configs/types.js';
import { generateKey, StaticKeys } from '../../src/platform/sealing/master-key.js';
import { Sealer } from '../../src/platform/sealing/sealer.js';
import { account, devbox, openPostgres, openSqlite, holdPostgres, type Backend } from './fixtures.js';
import { loopbackGuard } from '../helpers/outbound.js';

// The store contract for the MCP module (schema.ts) on both dialects: configs with reused names and list
// filters that take `%` and `_` literally, bindings and tokens written in the devbox's transaction, tokens
// of ended boxes swept, and re-sealing under a new key.
after(holdPostgres());

/** Every secret exists, named after its reference. */
const secrets: SecretReader = {
  resolve: async (_a, ref) => ({ id: `sec_${ref}`, name: ref }),
  reveal: async (_a, ref) => ({ id: `sec_${ref}`, name: ref, value: `value of ${ref}` }),
};

for (const open of [openSqlite, openPostgres]) {
  describe(`store contract, mcp: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());
    const key = generateKey();
    const sealer = new Sealer(new StaticKeys(key));

    test('configs: names reused, name prefix and search match % and _ literally, updates and deletes', async () => {
      await ready;
      const acc = await account(db.a);
      const configs = new McpConfigService(
        db.a,
        () => secrets,
        () => sealer,
        loopbackGuard,
      );
      const base = { endpoint: 'http://127.0.0.1:1/mcp', allowedTools: ['*'] };
      const a = await configs.create(acc.id, {
        ...base,
        name: 'git_hub-a',
        customHeaders: [
          { name: 'X-A', value: 'literal' },
          { name: 'X-B', secret: 'S' },
        ],
      });
      await configs.create(acc.id, { ...base, name: 'gitXhub-b' });
      await configs.create(acc.id, { ...base, name: 'gitXhub-b' });
      const page = { limit: 10, includeTotalCount: true };
      assert.deepEqual(
        (await configs.list(acc.id, page, { name: 'git_' })).items.map((c) => c.name),
        ['git_hub-a'],
      );
      assert.equal((await configs.list(acc.id, page, { name: 'git' })).totalCount, 3);
      assert.deepEqual(
        (await configs.list(acc.id, page, { search: '_hub' })).items.map((c) => c.id),
        [a.id],
      );
      // Case folded alike on both dialects (LIKE alone folds on SQLite only).
      assert.deepEqual(
        (await configs.list(acc.id, page, { name: 'GIT_' })).items.map((c) => c.name),
        ['git_hub-a'],
      );
      assert.equal((await configs.list(acc.id, page, { search: 'XHUB' })).totalCount, 2);
      await assert.rejects(configs.resolve(acc.id, 'gitXhub-b', 'f'), /more than one MCP config is named "gitXhub-b"/);
      assert.equal((await configs.resolve(acc.id, 'git_hub-a', 'f')).id, a.id);
      assert.deepEqual(await configs.headerValues(a), [
        ['X-A', 'literal', null],
        ['X-B', 'value of sec_S', 'sec_S'],
      ]);
      const other = new McpConfigService(
        db.b,
        () => secrets,
        () => sealer,
        loopbackGuard,
      );
      assert.equal((await other.update(acc.id, a.id, { allowedTools: ['get_*'] })).allowedTools[0], 'get_*');
      assert.deepEqual((await configs.get(acc.id, a.id)).allowedTools, ['get_*']);
      await other.delete(acc.id, a.id);
      await assert.rejects(configs.get(acc.id, a.id), /not found/);
    });

    test('bindings and tokens commit or roll back with the devbox; tokens of ended boxes are swept; re-sealing', async () => {
      await ready;
      const acc = await account(db.a);
      const configs = new McpConfigService(
        db.a,
        () => secrets,
        () => sealer,
        loopbackGuard,
      );
      const tokens = new McpTokens(
        db.a,
        configs,
        () => secrets,
        () => sealer,
      );
      const c = await configs.create(acc.id, {
        name: 'svc',
        endpoint: 'http://127.0.0.1:1/mcp',
        allowedTools: ['*'],
        customHeaders: [{ name: 'X-A', value: 'v' }],
      });
      const specs = await tokens.resolveSpecs(acc.id, { TOK: { mcpConfig: 'svc', secret: 'S' } });
      const lost = devbox(acc.id);
      await assert.rejects(
        db.a.transaction(async (tx) => {
          await tx.devboxes.insert(lost);
          await tokens.persist(tx, lost, specs);
          throw new Error('the insert fails after the persist');
        }),
      );
      assert.equal(await tokens.specs(lost.id), null);
      assert.deepEqual(await tokens.environment(lost, 'u'), {});
      const d = devbox(acc.id);
      await db.a.transaction(async (tx) => {
        await tx.devboxes.insert(d);
        await tokens.persist(tx, d, specs);
      });
      assert.deepEqual(await tokens.specs(d.id), { TOK: { mcp_config_id: c.id, secret_id: 'sec_S' } });
      const env = await tokens.environment(d, 'http://hub/mcp');
      assert.deepEqual(Object.keys(env).sort(), ['RL_MCP_TOKEN', 'RL_MCP_URL', 'TOK']);
      assert.equal((await tokens.authenticate(d.id, env.TOK!))?.upstreams[0]?.config.id, c.id);
      assert.equal(await tokens.authenticate('dbx_other', env.TOK!), undefined);

      // Re-sealed under a new key, everything opens with that key alone.
      const next = generateKey();
      const both = new Sealer(new StaticKeys(next, [key]));
      assert.ok((await resealMcp(db.b.db, both, next.id)) >= 3);
      assert.equal(await resealMcp(db.b.db, both, next.id), 0, 'a second pass finds nothing to do');
      const only = new Sealer(new StaticKeys(next));
      const after = new McpTokens(
        db.a,
        new McpConfigService(
          db.a,
          () => secrets,
          () => only,
          loopbackGuard,
        ),
        () => secrets,
        () => only,
      );
      assert.deepEqual(await after.environment(d, 'http://hub/mcp'), env);
      assert.deepEqual(
        await new McpConfigService(
          db.a,
          () => secrets,
          () => only,
          loopbackGuard,
        ).headerValues(await configs.get(acc.id, c.id)),
        [['X-A', 'v', null]],
      );

      const stranger = new Sealer(new StaticKeys(generateKey()));
      const lacking = new McpTokens(
        db.a,
        configs,
        () => secrets,
        () => stranger,
      );
      assert.deepEqual(await lacking.environment(d, 'http://hub/mcp'), { RL_MCP_URL: 'http://hub/mcp' }, 'a token that does not open is left out, not fatal');
      await db.a.db.query("UPDATE devboxes SET status = 'shutdown' WHERE id = ?", [d.id]);
      assert.ok((await new SqlMcpTokenStore(db.b.db).deleteTokensOfEndedBoxes()) >= 2);
      assert.equal(await tokens.authenticate(d.id, env.TOK!), undefined);
      assert.deepEqual(await tokens.specs(d.id), { TOK: { mcp_config_id: c.id, secret_id: 'sec_S' } }, 'bindings stay for the view');
    });
  });
}
