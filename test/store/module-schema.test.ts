import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ddl } from '../../src/platform/store/ddl.js';
import { type MigrationLog, migrateModules, type ModuleSchema } from '../../src/platform/store/module-schema.js';
import { CORE_SCHEMA } from '../../src/resources/core-schema.js';
import { openStore } from '../../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import { moduleVersions, schemaOf } from '../helpers/schema.js';
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
      await assert.rejects(
        migrateModules(db.b.db, [v1]),
        /newer devboxd \(module widgets: database schema v2, this devboxd knows up to v1\): run that devboxd/,
      );
    });

    test('a failing migration rolls back every step of the start, other modules too: the schema is as it was', async () => {
      await ready;
      const gadgets = (n: number): ModuleSchema => ({
        module: 'gadgets',
        steps: [
          ddl`CREATE TABLE gadgets (id TEXT PRIMARY KEY)`,
          ddl`ALTER TABLE gadgets ADD COLUMN colour TEXT; CREATE INDEX gadgets_colour ON gadgets (colour)`,
        ].slice(0, n),
      });
      await migrateModules(db.a.db, [gadgets(1)]);
      const before = [await schemaOf(db.a.db), await moduleVersions(db.a.db)];
      // A good step of one module, then a step of another that fails after its first statement.
      const bad: ModuleSchema = { module: 'broken', steps: [ddl`CREATE TABLE broken_a (id TEXT); CREATE TABLE nope (`] };
      const log = captureLog();
      await assert.rejects(migrateModules(db.a.db, [gadgets(2), bad], log), /module broken: migration v1 failed: .*the database is as it was/);
      assert.deepEqual([await schemaOf(db.a.db), await moduleVersions(db.a.db)], before);
      await assert.rejects(db.a.db.query('SELECT colour FROM gadgets'));
      assert.deepEqual(log.lines, [], 'nothing rolled back is logged as applied');
    });

    test('a database a newer devboxd migrated is refused at open, naming both versions, and left as it was', async () => {
      await ready;
      const core = CORE_SCHEMA.steps.length;
      await db.a.db.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', ['core', core + 1, Date.now()]);
      try {
        const before = [await schemaOf(db.a.db), await moduleVersions(db.a.db)];
        // With a module of this code still to create: refused before anything runs.
        const pending: ModuleSchema = { module: 'pending', steps: [ddl`CREATE TABLE pending_t (id TEXT)`] };
        const opened = db.reopen([...MODULE_SCHEMAS, pending]);
        await assert.rejects(opened, (err: Error) => {
          assert.match(
            err.message,
            new RegExp(`migrated by a newer devboxd \\(module core: database schema v${core + 1}, this devboxd knows up to v${core}\\)`),
          );
          assert.match(err.message, /run that devboxd or a newer one on it/);
          return true;
        });
        assert.deepEqual([await schemaOf(db.a.db), await moduleVersions(db.a.db)], before);
      } finally {
        await db.a.db.query('DELETE FROM module_migrations WHERE module = ? AND version = ?', ['core', core + 1]);
      }
    });

    test('each module migrated is logged once the start commits: module, from and to versions, duration', async () => {
      await ready;
      const more: ModuleSchema = { module: 'logged', steps: [ddl`CREATE TABLE logged_t (id TEXT)`, ddl`ALTER TABLE logged_t ADD COLUMN n INTEGER`] };
      const log = captureLog();
      await migrateModules(db.a.db, [{ ...more, steps: more.steps.slice(0, 1) }], log);
      await migrateModules(db.a.db, [more], log);
      await migrateModules(db.a.db, [more], log);
      assert.deepEqual(
        log.lines.map(({ fields: { duration_ms, ...rest }, msg }) => {
          assert.equal(typeof duration_ms, 'number');
          return [rest, msg.replace(/ \d+ ms$/, ' N ms')];
        }),
        [
          [{ module: 'logged', from: 0, to: 1 }, 'migrated module logged from schema v0 to v1 in N ms'],
          [{ module: 'logged', from: 1, to: 2 }, 'migrated module logged from schema v1 to v2 in N ms'],
        ],
      );
    });
  });
}

/** A logger that keeps what it was told. */
function captureLog(): MigrationLog & { lines: { fields: Record<string, unknown>; msg: string }[] } {
  const lines: { fields: Record<string, unknown>; msg: string }[] = [];
  return { lines, info: (fields, msg) => lines.push({ fields, msg }) };
}
