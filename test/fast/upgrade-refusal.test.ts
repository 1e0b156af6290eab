import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteExecutor } from '../../src/platform/store/sqlite/executor.js';
import { CORE_SCHEMA } from '../../src/resources/core-schema.js';
import { openStore } from '../../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../../src/resources/index.js';
import { moduleVersions } from '../helpers/schema.js';
import { DEVBOXD_BIN } from '../helpers/server.js';

/**
 * A data dir a newer devboxd migrated, as the operator meets it: devboxd exits 1 with one line naming the
 * module, both versions and what to do, and changes nothing. (test/store/module-schema.test.ts refuses such a
 * database at open on SQLite and PostgreSQL; this is the message a command or a start prints.)
 */
test('a database a newer devboxd migrated: exit 1, both versions named, nothing changed', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-newer-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const core = CORE_SCHEMA.steps.length;
  const store = await openStore({ dataDir: dir, modules: MODULE_SCHEMAS });
  await store.db.query('INSERT INTO module_migrations (module, version, applied_at_ms) VALUES (?, ?, ?)', ['core', core + 2, Date.now()]);
  const before = await moduleVersions(store.db);
  await store.close();
  const r = spawnSync(process.execPath, [DEVBOXD_BIN, 'keys', 'list', 'default'], { env: { ...process.env, DEVBOXD_DATA_DIR: dir }, encoding: 'utf8' });
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    `devboxd: the database was migrated by a newer devboxd (module core: database schema v${core + 2}, this devboxd knows up to v${core}): ` +
      'run that devboxd or a newer one on it, or restore a backup made before the upgrade; this devboxd changed nothing\n',
  );
  const reread = new SqliteExecutor(new Database(path.join(dir, 'devboxd.db'), { readonly: true }));
  assert.deepEqual(await moduleVersions(reread), before);
  await reread.close();
});
