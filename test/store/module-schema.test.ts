import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ddl } from '../../src/platform/store/ddl.js';
import { migrateModules, type ModuleSchema } from '../../src/platform/store/module-schema.js';
import { openStore } from '../../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import { freshPostgresUrl, openPostgres, openSqlite, holdPostgres, type Backend } from './fixtures.js';

// Resource modules migrate their own tables, counted per module, on both dialects.
after(holdPostgres());

const v1: ModuleSchema = {
  module: 'widgets',
  steps: [ddl`CREATE TABLE widgets (id TEXT PRIMARY KEY, name TEXT NOT NULL); CREATE INDEX widgets_name ON widgets (name);`],
};
const v2: ModuleSchema = { module: 'widgets', steps: [...v1.steps, ddl`ALTER TABLE widgets ADD COLUMN colour TEXT`] };

test('two servers starting at once on one empty PostgreSQL database both start, and migrate it once', async () => {
  // The race is in the first statements (the migrations table itself): a few rounds make a lost race likely.
  for (let round = 0; round < 5; round++) {
    const url = await freshPostgresUrl();
    const open = () => openStore({ dataDir: '/nonexistent', databaseUrl: url, modules: MODULE_SCHEMAS });
    const stores = await Promise.all([open(), open(), open()]);
    // The core tables' versions are in module_migrations (module 'core') like every module's.
    const { rows } = await stores[0]!.db.query<{ n: number; m: number }>(
      "SELECT COUNT(*) AS n, COUNT(DISTINCT version) AS m FROM module_migrations WHERE module = 'core'",
    );
    assert.equal(Number(rows[0]?.n), Number(rows[0]?.m), 'each core migration is recorded once');
    for (const s of stores) await s.close();
  }
});

for (const open of [openSqlite, openPostgres]) {
  describe(`module schemas: ${open === openSqlite ? 'sqlite' : 'postgres'}`, () => {
    let db: Backend;
    const ready = (async () => (db = await open()))();
    after(async () => (await ready).close());

    test('a module migrates once, later versions apply on the next start, and a newer database is refused', async () => {
      await ready;
      // Two servers starting at once apply each version once.
      await Promise.all([migrateModules(db.a.db, [v1]), migrateModules(db.b.db, [v1])]);
      await db.a.db.query('INSERT INTO widgets (id, name) VALUES (?, ?)', ['w1', 'one']);
      await migrateModules(db.a.db, [v2]);
      await db.a.db.query('UPDATE widgets SET colour = ? WHERE id = ?', ['red', 'w1']);
      const { rows } = await db.b.db.query<{ colour: string }>('SELECT colour FROM widgets WHERE id = ?', ['w1']);
      assert.equal(rows[0]?.colour, 'red');
      const versions = await db.a.db.query<{ n: number }>("SELECT COUNT(*) AS n FROM module_migrations WHERE module = 'widgets'");
      assert.equal(Number(versions.rows[0]?.n), 2);
      // An older devboxd that knows only v1 refuses the database rather than run against a schema it does not know.
      await assert.rejects(migrateModules(db.b.db, [v1]), /module widgets: database schema v2 is newer than this devboxd \(v1\)/);
    });

    test('a failing migration leaves nothing behind and names the module', async () => {
      await ready;
      const bad: ModuleSchema = { module: 'broken', steps: [ddl`CREATE TABLE broken_a (id TEXT); CREATE TABLE nope (`] };
      await assert.rejects(migrateModules(db.a.db, [bad]), /module broken: migration v1 failed/);
      const { rows } = await db.a.db.query<{ n: number }>("SELECT COUNT(*) AS n FROM module_migrations WHERE module = 'broken'");
      assert.equal(Number(rows[0]?.n), 0);
      await assert.rejects(db.a.db.query('SELECT * FROM broken_a'));
    });
  });
}
