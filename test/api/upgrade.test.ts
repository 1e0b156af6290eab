import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type Runloop from '@runloop/api-client';
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import Database from 'better-sqlite3';
import { PgExecutor } from '../../src/platform/store/postgres/executor.js';
import type { SqlExecutor } from '../../src/platform/store/sql/executor.js';
import { SqliteExecutor } from '../../src/platform/store/sqlite/executor.js';
import { CORE_SCHEMA } from '../../src/resources/core-schema.js';
import { openStore } from '../../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { previousDevboxd } from '../helpers/previous-version.js';
import { moduleVersions, schemaOf } from '../helpers/schema.js';
import { DEVBOXD_BIN, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Upgrades (issue 29, item 3). The devboxd of the previous landed version (the commit
 * test/fixtures/upgrade/PREVIOUS names, made runnable by helpers/previous-version.ts) starts on an empty data
 * dir, on SQLite and on PostgreSQL, and the official SDK fills it: keys (standard, restricted, another
 * account's), secrets, an object, an axon with events, a network policy, gateway and MCP configs, an agent, a
 * running box with a file on its disk and a disk snapshot of it. It stops as a service manager stops it
 * (SIGTERM; the box runs on) and this checkout's devboxd starts on the same data: everything is found through
 * the SDK, the box still runs, a box boots from the old snapshot with the old secret, every module's schema is
 * at this code's version and the same as a fresh database's, and each module the upgrade migrated is logged.
 */
const TEXT = 'hello from before the upgrade';

interface Made {
  keyB: string;
  standardKey: string;
  restrictedKey: string;
  box: string;
  ids: Record<string, string>;
}

/** What a user makes through the SDK (and the operator's CLI, for the second account) on the old server. */
async function fill(server: TestServer, bin: string, env: Record<string, string>): Promise<Made> {
  const api = server.client();
  const sdk = server.sdk();
  const ids: Record<string, string> = {};
  ids.secret = (await api.secrets.create({ name: 'UPGRADE_TOKEN', value: 'kept-across-upgrade' })).id;
  const standardKey = (await api.apikeys.create({ name: 'upgrade-standard' })).key_secret!;
  const restricted = { resource_type: 'RESOURCE_TYPE_DEVBOXES', access_level: 'ACCESS_LEVEL_READ' } as const;
  const restrictedKey = (await api.restrictedKeys.create({ name: 'upgrade-read', scopes: [restricted] })).key_secret!;
  // The previous version's own operator command, on its data (the key is its output's last line).
  const created = execFileSync(process.execPath, [bin, 'accounts', 'create', 'team-upgrade'], {
    env: { ...process.env, DEVBOXD_DATA_DIR: server.dataDir, DEVBOXD_LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
  });
  const keyB = created.trim().split('\n').at(-1)!;
  ids.secretB = (await server.client({ apiKey: keyB }).secrets.create({ name: 'B_TOKEN', value: 'b' })).id;
  ids.object = (await sdk.storageObject.uploadFromText(TEXT, 'upgrade.txt')).id;
  ids.axon = (await api.axons.create({ name: 'upgrade-axon', metadata: { kept: 'yes' } })).id;
  for (const n of [1, 2]) await api.axons.publish(ids.axon, { event_type: 'push', origin: 'EXTERNAL_EVENT', payload: `{"n":${n}}`, source: 'upgrade' });
  ids.policy = (await api.networkPolicies.create({ name: 'upgrade-net', allow_all: true })).id;
  ids.gateway = (await api.gatewayConfigs.create({ name: 'upgrade-gw', endpoint: 'https://api.example.com', auth_mechanism: { type: 'bearer' } })).id;
  ids.mcp = (await api.mcpConfigs.create({ name: 'upgrade-mcp', endpoint: 'https://mcp.example.com/mcp', allowed_tools: ['search_*'] })).id;
  ids.agent = (await api.agents.create({ name: 'upgrade-agent', version: '1' })).id;
  const box = await sdk.devbox.create({ name: 'upgrade-box', secrets: { TOKEN: 'UPGRADE_TOKEN' }, launch_parameters: { network_policy_id: ids.policy } });
  assert.equal((await box.cmd.exec('echo kept > ~/kept.txt')).exitCode, 0);
  ids.snapshot = (await box.snapshotDisk({ name: 'upgrade-snap' })).id;
  return { keyB, standardKey, restrictedKey, box: box.id, ids };
}

/** Its stdout, asserting it exited 0. */
async function sh(box: Devbox, command: string): Promise<string> {
  const r = await box.cmd.exec(command);
  assert.equal(r.exitCode, 0, `${command}: ${await r.stderr()}`);
  return (await r.stdout()).trim();
}

/** The database the server uses, opened beside it (the API server's SQLite file is under `<data>/api`). */
function openDb(server: TestServer, url: string | undefined): SqlExecutor {
  return url ? PgExecutor.connect(url, 1) : new SqliteExecutor(new Database(path.join(server.apiDir, 'devboxd.db'), { readonly: true }));
}

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`upgrade from the previous landed version: ${db}`, () => {
    let server: TestServer;
    let pg: TestPostgres | undefined;
    let url: string | undefined;
    let made: Made;
    let previous: string;
    let versionsBefore: Record<string, number>;
    const boxes: Devbox[] = [];

    before(async () => {
      const prev = await previousDevboxd();
      previous = prev.commit.slice(0, 7);
      const env: Record<string, string> = {};
      if (db === 'postgres') {
        pg = await startTestPostgres();
        url = env.DEVBOXD_DATABASE_URL = await pg.database('upgrade');
      }
      server = await startTestServer(env, { bin: prev.bin });
      made = await fill(server, prev.bin, env);
      await server.restart({
        graceful: true,
        bin: DEVBOXD_BIN,
        // The migrations are logged at info.
        env: { DEVBOXD_LOG_LEVEL: 'info' },
        whileDown: async () => {
          const old = openDb(server, url);
          versionsBefore = await moduleVersions(old);
          await old.close();
        },
      });
    });
    after(async () => {
      for (const b of boxes) await b.shutdown().catch(() => undefined);
      await server?.stop();
      await pg?.stop();
    });

    const api = (apiKey?: string): Runloop => server.client({ apiKey, maxRetries: 0 });

    test('the box made before still runs, with its file and its secret', async () => {
      const box = server.sdk().devbox.fromId(made.box);
      assert.equal((await box.getInfo()).status, 'running');
      assert.equal(await sh(box, 'cat ~/kept.txt; echo "$TOKEN"'), 'kept\nkept-across-upgrade');
    });

    test('a box boots from the snapshot made before, and the secret made before reaches it', async () => {
      const snap = await api().devboxes.diskSnapshots.queryStatus(made.ids.snapshot!);
      assert.equal(snap.status, 'complete');
      const box = await server.sdk().devbox.createFromSnapshot(made.ids.snapshot!, { secrets: { TOKEN: 'UPGRADE_TOKEN' } });
      boxes.push(box);
      assert.equal(await sh(box, 'cat ~/kept.txt; echo "$TOKEN"'), 'kept\nkept-across-upgrade');
    });

    test('objects, axons and their events, policies, configs and agents are there', async () => {
      const { ids } = made;
      assert.equal(await server.sdk().storageObject.fromId(ids.object!).downloadAsText(), TEXT);
      const axon = await api().axons.retrieve(ids.axon!);
      assert.deepEqual([axon.name, axon.metadata], ['upgrade-axon', { kept: 'yes' }]);
      const events = await api().axons.events.list(ids.axon!, { limit: 10 });
      assert.deepEqual(events.events.map((e) => e.payload).sort(), ['{"n":1}', '{"n":2}']);
      assert.equal((await api().networkPolicies.retrieve(ids.policy!)).name, 'upgrade-net');
      assert.equal((await api().gatewayConfigs.retrieve(ids.gateway!)).name, 'upgrade-gw');
      assert.equal((await api().mcpConfigs.retrieve(ids.mcp!)).name, 'upgrade-mcp');
      assert.equal((await api().agents.retrieve(ids.agent!)).name, 'upgrade-agent');
    });

    test('every key made before authenticates as it did: standard, restricted, another account', async () => {
      const secrets = async (key: string) => (await api(key).secrets.list()).secrets.map((s) => s.name).sort();
      assert.deepEqual(await secrets(made.standardKey), ['UPGRADE_TOKEN']);
      assert.deepEqual(await secrets(made.keyB), ['B_TOKEN']);
      const restricted = api(made.restrictedKey);
      assert.ok((await restricted.devboxes.list({ limit: 100 })).devboxes.some((b) => b.id === made.box));
      await assert.rejects(restricted.secrets.create({ name: 'NOPE', value: 'x' }), (err: { status?: number }) => err.status === 403);
    });

    test("every module's schema is at this code's version, the same as a fresh database's, and each migration is logged", async () => {
      const upgraded = openDb(server, url);
      const freshDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-upgrade-fresh-'));
      const fresh = await openStore({ dataDir: freshDir, databaseUrl: pg && (await pg.database('fresh')), modules: MODULE_SCHEMAS });
      try {
        const latest = Object.fromEntries([CORE_SCHEMA, ...MODULE_SCHEMAS].map((s) => [s.module, s.steps.length]));
        const versions = await moduleVersions(upgraded);
        assert.deepEqual(versions, { ...versions, ...latest });
        assert.deepEqual(await schemaOf(upgraded), await schemaOf(fresh.db));
        const logged = server
          .output()
          .split('\n')
          .flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as { msg?: string; module?: string; from?: number; to?: number }] : []))
          .filter((l) => l.msg?.startsWith('migrated module '))
          .map((l) => [l.module, l.from, l.to]);
        const changed = Object.entries(latest)
          .filter(([m, v]) => (versionsBefore[m] ?? 0) !== v)
          .map(([m, v]) => [m, versionsBefore[m] ?? 0, v]);
        assert.deepEqual(logged.sort(), changed.sort(), `migrations from ${previous}`);
      } finally {
        await fresh.close();
        await upgraded.close();
        fs.rmSync(freshDir, { recursive: true, force: true });
      }
    });
  });
}
