import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { COUNTERS_RETIRED } from '../../src/platform/store/module-schema.js';
import { PgExecutor } from '../../src/platform/store/postgres/executor.js';
import { openDatabase } from '../../src/platform/store/sqlite/db.js';
import { CORE_SCHEMA } from '../../src/resources/core-schema.js';
import { openStore } from '../../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import { answers, buildFastApp, type FastApp } from '../helpers/app.js';
import { ROOT } from '../helpers/paths.js';
import { postgresBin, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { schemaOf } from '../helpers/schema.js';

/**
 * A data dir and a PostgreSQL database made by the devboxd before each table was written once for both
 * databases (test/fixtures/upgrade, scripts/make-upgrade-fixture.ts) open with this code: the server starts,
 * what was made before is there through the API, every module is recorded at its latest version, and the
 * schema is the same as a fresh database's, which proves the steps as written once spell the old DDL.
 * That is the oldest layout a devboxd meets (its versions in SQLite's user_version and PostgreSQL's
 * schema_migrations); test/api/upgrade.test.ts starts the previous landed version itself and upgrades from it.
 */
const FIXTURES = path.join(ROOT, 'test/fixtures/upgrade');
type Made = { keyB: string; ids: Record<string, string> };

/** A copy of a fixture's data dir (master key, blobs; SQLite's database), with the modes git does not keep. */
function dataDirFrom(fixture: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-upgrade-'));
  fs.cpSync(path.join(FIXTURES, fixture), dir, { recursive: true });
  for (const f of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    fs.chmodSync(path.join(f.parentPath ?? f.path, f.name), f.isDirectory() ? 0o700 : 0o600);
  }
  return dir;
}

/** The suite on one database: test/fast/upgrade.test.ts runs it on SQLite, test/store/upgrade-pg.test.ts on PostgreSQL. */
export const suiteOn = (db: 'sqlite' | 'postgres') =>
  describe(`upgrade from a ${db} database made before: ${db}`, () => {
    const made = (JSON.parse(fs.readFileSync(path.join(FIXTURES, 'made.json'), 'utf8')) as Record<string, Made>)[db]!;
    const { ids } = made;
    let f: FastApp;
    let pg: TestPostgres | undefined;
    let dataDir: string;
    let freshUrl: string | undefined;
    const { ok } = answers<Record<string, unknown>>(() => f);

    before(async () => {
      dataDir = dataDirFrom(db);
      const env: Record<string, string> = { DEVBOXD_DATA_DIR: dataDir };
      if (db === 'postgres') {
        pg = await startTestPostgres();
        env.DEVBOXD_DATABASE_URL = await pg.database('upgraded');
        freshUrl = await pg.database('fresh');
        const restore = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', env.DEVBOXD_DATABASE_URL, '-f', path.join(FIXTURES, 'postgres.sql')];
        execFileSync(postgresBin('psql'), restore, { stdio: ['ignore', 'ignore', 'pipe'] });
      }
      f = await buildFastApp({ env });
    });
    after(async () => {
      await f?.close();
      await pg?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    test('what was made before is there through the API, keys included', async () => {
      assert.equal((await ok({ method: 'GET', url: `/v1/devboxes/${ids.devbox}` })).name, 'upgrade-box');
      assert.equal((await ok({ method: 'GET', url: `/v1/network-policies/${ids.policy}` })).name, 'upgrade-net');
      assert.equal((await ok({ method: 'GET', url: `/v1/gateway-configs/${ids.gateway}` })).name, 'upgrade-gw');
      assert.equal((await ok({ method: 'GET', url: `/v1/mcp-configs/${ids.mcp}` })).name, 'upgrade-mcp');
      assert.equal((await ok({ method: 'GET', url: `/v1/agents/${ids.agent}` })).name, 'upgrade-agent');
      assert.equal((await ok({ method: 'GET', url: `/v1/scenarios/${ids.scenario}` })).name, 'upgrade-scenario');
      // The API spells this one field in camelCase (as the Runloop API does).
      assert.deepEqual((await ok({ method: 'GET', url: `/v1/benchmarks/${ids.benchmark}` })).scenarioIds, [ids.scenario]);
      const axon = await ok({ method: 'GET', url: `/v1/axons/${ids.axon}` });
      assert.deepEqual([axon.name, axon.metadata], ['upgrade-axon', { kept: 'yes' }]);
      const events = await ok<{ events: { payload: string }[] }>({ method: 'GET', url: `/v1/axons/${ids.axon}/events` });
      assert.deepEqual(events.events.map((e) => e.payload).sort(), ['{"n":1}', '{"n":2}']);
      const secrets = await ok<{ secrets: { id: string; name: string }[] }>({ method: 'GET', url: '/v1/secrets' });
      assert.ok(secrets.secrets.some((s) => s.id === ids.secret && s.name === 'UPGRADE_TOKEN'));
      // Another account's key still authenticates, and sees its own secret only.
      const theirs = await ok<{ secrets: { id: string }[] }>({ method: 'GET', url: '/v1/secrets', key: made.keyB });
      assert.deepEqual(
        theirs.secrets.map((s) => s.id),
        [ids.secretB],
      );
      // The object's bytes are where its record says (the blob store in the data dir).
      assert.equal((await ok({ method: 'GET', url: `/v1/objects/${ids.object}` })).state, 'READ_ONLY');
      const url = new URL((await ok<{ download_url: string }>({ method: 'GET', url: `/v1/objects/${ids.object}/download` })).download_url);
      assert.equal((await f.call({ method: 'GET', url: `${url.pathname}${url.search}`, key: null })).body, 'hello from before the upgrade');
    });

    test('every module is recorded at its latest version, and the old counter is retired', async () => {
      const store = f.deps.store.db;
      for (const schema of [CORE_SCHEMA, ...MODULE_SCHEMAS]) {
        const { rows } = await store.query<{ n: number; v: number }>('SELECT COUNT(*) AS n, MAX(version) AS v FROM module_migrations WHERE module = ?', [
          schema.module,
        ]);
        assert.deepEqual([Number(rows[0]?.n), Number(rows[0]?.v)], [schema.steps.length, schema.steps.length], schema.module);
      }
      const counter =
        db === 'sqlite'
          ? (await store.query<{ user_version: number }>('PRAGMA user_version')).rows[0]?.user_version
          : (await store.query<{ v: number }>('SELECT MAX(version) AS v FROM schema_migrations')).rows[0]?.v;
      assert.equal(counter, COUNTERS_RETIRED);
    });

    /** The schema of a fresh database made by this code, on this dialect. */
    async function freshSchema(): Promise<unknown> {
      const freshDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-upgrade-fresh-'));
      const fresh = await openStore({ dataDir: freshDir, databaseUrl: freshUrl, modules: MODULE_SCHEMAS });
      try {
        return await schemaOf(fresh.db);
      } finally {
        await fresh.close();
        fs.rmSync(freshDir, { recursive: true, force: true });
      }
    }

    test('the schema is the same as a fresh database made by this code', async () => {
      assert.deepEqual(await schemaOf(f.deps.store.db), await freshSchema());
    });

    test('a database an older devboxd left part way (SQLite v6, PostgreSQL v1: the same tables) is brought up to date', async () => {
      // Made as that devboxd made it, with the core steps as written here (the test above proves them its own).
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-upgrade-v6-'));
      const url = pg && (await pg.database('part_way'));
      const six = CORE_SCHEMA.steps.slice(0, 6).map((s) => s.render(db));
      if (url) {
        const old = PgExecutor.connect(url);
        for (const step of six) await old.script(step);
        await old.script(
          'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL); INSERT INTO schema_migrations VALUES (1, 0);',
        );
        await old.close();
      } else {
        const old = openDatabase(dir);
        for (const step of six) old.exec(step);
        old.pragma('user_version = 6');
        old.close();
      }
      const store = await openStore({ dataDir: dir, databaseUrl: url, modules: MODULE_SCHEMAS });
      try {
        const { rows } = await store.db.query<{ v: number }>("SELECT MAX(version) AS v FROM module_migrations WHERE module = 'core'");
        assert.equal(Number(rows[0]?.v), CORE_SCHEMA.steps.length);
        assert.deepEqual(await schemaOf(store.db), await freshSchema());
      } finally {
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
