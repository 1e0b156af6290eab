/**
 * What `devboxd restore` refuses before it writes anything, on hand-made backups (no server, no root: the API
 * role): a directory that is no backup, a schema newer than this code, a damaged file (its checksum), each
 * leaving no data dir and no `<data>.restoring` behind. The whole round trip is test/api/backup.test.ts.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { restore } from '../../src/ops/backup/restore.js';
import type { Manifest } from '../../src/ops/backup/manifest.js';

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-restore-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const DB = 'not really a database, but bytes with a checksum';
const SUM = '7a3a2be9ff1bb2b5e2b7d77a6e5fb1b6a3bbd4b2c1c9b37d9de4f63a0d2d0d8c';

/** A backup of the API role at `name` with one file, whose manifest `edit` may change. */
function backup(name: string, edit: (m: Manifest) => void = () => undefined): string {
  const src = path.join(dir, name);
  fs.mkdirSync(path.join(src, 'api'), { recursive: true });
  fs.writeFileSync(path.join(src, 'api/devboxd.db'), DB);
  const m: Manifest = {
    format: 'devboxd-backup',
    version: 1,
    devboxd: '0.1.0',
    createdAt: new Date().toISOString(),
    seconds: 0,
    role: 'api',
    node: 'n',
    apiOwner: null,
    database: { kind: 'sqlite', path: 'api/devboxd.db', schema: { core: 9 } },
    blobs: { backend: 'fs', files: 0, bytes: 0 },
    masterKey: { included: false, from: 'no key', keys: [] },
    layers: [],
    vanished: [],
    entries: [{ path: 'api/devboxd.db', kind: 'sqlite', bytes: DB.length, digest: 'sha256', sum: SUM }],
  };
  edit(m);
  fs.writeFileSync(path.join(src, 'manifest.json'), JSON.stringify(m));
  return src;
}

async function refusal(src: string): Promise<string> {
  const data = path.join(dir, `data-${path.basename(src)}`);
  const config = loadConfig({ DEVBOXD_ROLE: 'api', DEVBOXD_CLUSTER_TOKEN: 'x'.repeat(32), DEVBOXD_DATA_DIR: data });
  const err = await restore(config, {
    src,
    ignoreMasterKey: false,
    known: { core: 9 },
    openStore: () => Promise.reject(new Error('never opened')),
    say: () => undefined,
  }).then(
    () => assert.fail('restored'),
    (e: Error) => e,
  );
  assert.ok(!fs.existsSync(data) && !fs.existsSync(`${data}.restoring`), 'nothing left behind');
  return err.message;
}

test('a directory that is no backup, a newer schema, a damaged file: refused, nothing written', async () => {
  fs.mkdirSync(path.join(dir, 'empty'));
  assert.match(await refusal(path.join(dir, 'empty')), /is not a devboxd backup: cannot read manifest\.json \(it has none\)/);
  assert.match(
    await refusal(backup('newer', (m) => (m.database!.schema.core = 10))),
    /the backup's database is at schema core v10, newer than this devboxd knows \(v9\): restore it with devboxd 0\.1\.0 or newer/,
  );
  assert.match(await refusal(backup('damaged')), /the backup is damaged: 1 of its files do not match the manifest's checksums \(api\/devboxd\.db\)/);
});
