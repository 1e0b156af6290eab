/**
 * `devboxd restore SRC` into an empty data dir (and, for PostgreSQL, an empty database): checks first (the
 * manifest, the schema, the target, the master key), then copies into `<data>.restoring`, checks every
 * checksum, loads the dump, ends the boxes whose sandboxes a backup cannot hold (restored-boxes.ts), gives the
 * API server's files to this host's API user and renames the whole into place. Copies, never links: the
 * restored server writes, and the backup stays as it was.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Config } from '../../config.js';
import { lookupUser } from '../../roles/layout.js';
import { readKeyFile, writeKeyFile } from '../../platform/sealing/master-key.js';
import type { Store } from '../../platform/store/types.js';
import { eachLimited, placeTree } from './copy.js';
import { openPostgres, pgRestore, postgresIsEmpty } from './database.js';
import { digestOf } from './digest.js';
import { type HeldKeys, heldKeys, keyProblem } from './keys.js';
import { KEY_FILE, LAYERS, PG_DUMP, SQLITE_FILE, targetsOf, type Places, within } from './layout.js';
import { type Entry, type Manifest, readManifest, fsyncDir } from './manifest.js';
import { endRestoredBoxes } from './restored-boxes.js';
import { chownApi } from './owners.js';

const run = promisify(execFile);

export interface RestoreOptions {
  src: string;
  keyFile?: string;
  ignoreMasterKey: boolean;
  /** The schema versions this devboxd knows, by module. */
  known: Record<string, number>;
  openStore(dataDir: string, databaseUrl: string | undefined): Promise<Store>;
  say(line: string): void;
}

export async function restore(c: Config, o: RestoreOptions): Promise<Manifest> {
  const src = path.resolve(o.src);
  const m = readManifest(src);
  const role = c.roles.role;
  checkSchema(m, o.known);
  checkTarget(c, m);
  if (c.databaseUrl && m.database && role !== 'node') {
    const db = openPostgres(c.databaseUrl);
    const empty = await postgresIsEmpty(db).finally(() => db.close());
    if (!empty) throw new Error(`the database of DEVBOXD_DATABASE_URL holds tables already: restore goes into an empty database (create one)`);
  }
  // This host's API user, before anything is written: one that does not exist stops the restore here.
  const apiUser = role === 'all' && m.apiOwner ? lookupUser(c.roles.apiUser) : null;
  const backupKey = path.join(src, 'api', KEY_FILE);
  const held: HeldKeys = c.secretKey ? heldKeys(c, undefined) : heldKeys(c, o.keyFile ?? (fs.existsSync(backupKey) ? backupKey : undefined));
  const problem = m.database ? keyProblem(m.masterKey.keys, held) : null;
  if (problem && !o.ignoreMasterKey) throw new Error(problem);

  const tmp = `${c.dataDir}.restoring`;
  fs.mkdirSync(path.dirname(tmp), { recursive: true });
  try {
    fs.mkdirSync(tmp, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${tmp} exists: another restore is writing it, or one was cut short (remove it, then run again)`);
    throw err;
  }
  const to = targetsOf(role, tmp);
  let loaded = false;
  try {
    const restored = await copyParts(src, m, to);
    if (!to.nodeDir && m.layers.length) o.say(`layers not restored here (DEVBOXD_ROLE=${role}): restore them on the node, with DEVBOXD_ROLE=node`);
    await verify(src, m, to, restored);
    o.say(`copied and checked ${restored.length} files and layers`);
    if (to.apiDir && m.database) {
      if (o.keyFile && !c.secretKey) writeKeyFile(path.join(to.apiDir, KEY_FILE), readKeyFile(o.keyFile));
      if (c.databaseUrl) {
        await pgRestore(c.databaseUrl, path.join(src, m.database.path));
        loaded = true;
      }
      const store = await o.openStore(to.apiDir, c.databaseUrl);
      const ended = await endRestoredBoxes(store, m.createdAt).finally(() => store.close());
      o.say(`boxes that had a sandbox at the backup: ${ended.boxes}, now failure (restored from backup); their unfinished commands: ${ended.executions}`);
      if (apiUser && m.apiOwner) chownApi(to.apiDir, m.apiOwner, apiUser);
    }
    o.say(problem ? `master key: NOT held (--ignore-master-key): ${problem.split(';')[0]}` : `master key: ${keyNote(m, held)}`);
    await run('sync', ['-f', tmp]);
    try {
      fs.renameSync(tmp, c.dataDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY')
        throw new Error(`${c.dataDir} was written to during the restore: restore goes into an empty data dir`);
      throw err;
    }
    fsyncDir(path.dirname(c.dataDir));
    if (to.nodeDir && within(c.imageDir, c.dataDir))
      o.say(`the base image is not in a backup: the server builds it at its first start (from Debian's mirrors), or set DEVBOXD_IMAGE_DIR to a cache`);
    return m;
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (loaded && err instanceof Error) err.message += ' (the database of DEVBOXD_DATABASE_URL holds the restored tables now: empty it before restoring again)';
    throw err;
  }
}

function checkSchema(m: Manifest, known: Record<string, number>): void {
  for (const [module, version] of Object.entries(m.database?.schema ?? {})) {
    const mine = known[module];
    if (mine === undefined || version > mine) {
      throw new Error(
        `the backup's database is at schema ${module} v${version}, newer than this devboxd knows (${mine === undefined ? 'no such module' : `v${mine}`}): restore it with devboxd ${m.devboxd} or newer`,
      );
    }
  }
}

function checkTarget(c: Config, m: Manifest): void {
  if (c.roles.role !== 'api' && process.getuid?.() !== 0) throw new Error('restore runs as root: the layers and the API server keep their owners');
  const entries = fs.existsSync(c.dataDir) ? fs.readdirSync(c.dataDir) : [];
  if (entries.length) {
    throw new Error(
      `the data dir ${c.dataDir} is not empty (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', …' : ''}): restore goes into an empty one (set DEVBOXD_DATA_DIR to a new directory)`,
    );
  }
  if (c.roles.role !== 'node' && !m.database)
    throw new Error('the backup holds no database (it was made with DEVBOXD_ROLE=node): restore it with DEVBOXD_ROLE=node');
  if (m.database?.kind === 'postgres' && c.roles.role !== 'node' && !c.databaseUrl)
    throw new Error('the backup holds a PostgreSQL dump: set DEVBOXD_DATABASE_URL to an empty database to restore it into');
  if (m.database?.kind === 'sqlite' && c.databaseUrl) throw new Error('the backup holds a SQLite database: unset DEVBOXD_DATABASE_URL to restore it');
}

/** Copies the backup's parts this role keeps; answers the entries restored. */
async function copyParts(src: string, m: Manifest, to: Places): Promise<Entry[]> {
  const api = path.join(src, 'api');
  if (to.apiDir && fs.existsSync(api)) {
    fs.mkdirSync(to.apiDir, { recursive: true, mode: 0o700 });
    // The dump is loaded into PostgreSQL, not kept in the data dir; the key file is the keys' business.
    const names = fs.readdirSync(api).filter((n) => n !== PG_DUMP && n !== KEY_FILE);
    await eachLimited(names, async (n) => void (await placeTree(path.join(api, n), path.join(to.apiDir!, n), false)));
    if (fs.existsSync(path.join(api, KEY_FILE))) await placeTree(path.join(api, KEY_FILE), path.join(to.apiDir, KEY_FILE), false);
  }
  if (to.nodeDir && fs.existsSync(path.join(src, LAYERS))) await placeTree(path.join(src, LAYERS), path.join(to.nodeDir, LAYERS), false);
  return m.entries.filter((e) => whereRestored(src, e, to) !== null);
}

/** Where an entry of the backup is after the copy (the dump stays in the backup); null when not restored. */
function whereRestored(src: string, e: Entry, to: Places): string | null {
  const [part, ...rest] = e.path.split('/');
  if (part === 'api' && rest.join('/') === PG_DUMP) return path.join(src, e.path);
  if (part === 'api') return to.apiDir && path.join(to.apiDir, ...rest);
  if (part === LAYERS) return to.nodeDir && path.join(to.nodeDir, LAYERS, ...rest);
  return null;
}

async function verify(src: string, m: Manifest, to: Places, entries: Entry[]): Promise<void> {
  const bad: string[] = [];
  await eachLimited(entries, async (e) => {
    const file = whereRestored(src, e, to)!;
    const sum = await digestOf(e.digest, file).catch((err: NodeJS.ErrnoException) => `missing (${err.code ?? err.message})`);
    if (sum !== e.sum) bad.push(e.path);
  });
  if (bad.length) throw new Error(`the backup is damaged: ${bad.length} of its files do not match the manifest's checksums (${bad.slice(0, 5).join(', ')})`);
  if (m.database?.kind === 'sqlite' && to.apiDir && !fs.existsSync(path.join(to.apiDir, SQLITE_FILE))) throw new Error('the backup has no database file');
}

function keyNote(m: Manifest, held: HeldKeys): string {
  const sealed = m.masterKey.keys.reduce((n, k) => n + k.sealed, 0);
  if (!sealed) return 'nothing in the backup is sealed under one';
  return `${sealed} sealed values open under ${held.from === 'DEVBOXD_SECRET_KEY' ? 'DEVBOXD_SECRET_KEY' : 'the restored key file'} (${held.keys.map((k) => k.id).join(', ')})`;
}
