/**
 * `devboxd backup DEST`, beside a running server whose boxes keep running: layers and blobs, the database at one
 * instant, then what appeared meanwhile (passes.ts says why that order), the axons' databases, output still
 * being written, the SSH host keys, and the manifest. Everything goes to `DEST.tmp`, renamed to DEST once
 * whole: a DEST is always a finished backup.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Config } from '../../config.js';
import { writeKeyFile } from '../../platform/sealing/master-key.js';
import type { SealedTexts } from '../../platform/sealing/resealing.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { sameDirs, sameFilesystem } from './copy.js';
import { copySqlite, openPostgres, openSqliteCopy, pgDump, schemaVersions } from './database.js';
import { sha256File } from './digest.js';
import { heldKeys, sealedUse } from './keys.js';
import { API_COPIED, AXONS, axonFiles, BLOBS, KEY_FILE, PG_DUMP, SQLITE_FILE, sourcesOf, within } from './layout.js';
import { FORMAT, FORMAT_VERSION, fsyncDir, type Manifest, writeManifest } from './manifest.js';
import { Collected, takeFiles, takeLayers } from './passes.js';

const run = promisify(execFile);

export interface BackupOptions {
  dest: string;
  withMasterKey: boolean;
  /** Every module's sealed texts, to count what is sealed under which key. */
  sealed: readonly SealedTexts[];
  version: string;
  say: (line: string) => void;
}

export async function backup(c: Config, o: BackupOptions): Promise<Manifest> {
  const started = Date.now();
  const src = sourcesOf(c);
  const dest = path.resolve(o.dest);
  for (const dir of [src.apiDir, src.nodeDir]) {
    if (dir && within(dest, dir)) throw new Error(`${dest} is inside the data dir ${dir}: put the backup elsewhere (best on another disk)`);
  }
  if (fs.existsSync(dest)) throw new Error(`${dest} exists: a backup is written to a new directory`);
  const db = src.apiDir && !c.databaseUrl ? path.join(src.apiDir, SQLITE_FILE) : null;
  if (db && !fs.existsSync(db)) throw new Error(`there is no database at ${db}: is DEVBOXD_DATA_DIR the server's data dir?`);
  const tmp = `${dest}.tmp`;
  try {
    fs.mkdirSync(tmp, { mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new Error(`${tmp} exists: another backup is writing it, or one was cut short (remove it, then run again)`);
    if (code === 'ENOENT') throw new Error(`the directory ${path.dirname(dest)} does not exist`);
    throw err;
  }
  try {
    const m = await write(c, o, tmp, src);
    // What was copied is on disk before the manifest says the backup is whole.
    await run('sync', ['-f', tmp]);
    m.seconds = (Date.now() - started) / 1000;
    writeManifest(tmp, m);
    fsyncDir(tmp);
    fs.renameSync(tmp, dest);
    fsyncDir(path.dirname(dest));
    return m;
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function write(c: Config, o: BackupOptions, tmp: string, src: ReturnType<typeof sourcesOf>): Promise<Manifest> {
  const out = new Collected(tmp);
  const { apiDir, nodeDir } = src;
  const t0 = Date.now();
  const at = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  const fsBlobs = apiDir !== null && c.blob.backend === 'fs';
  const blobsDir = apiDir ? path.join(apiDir, BLOBS) : '';
  const linkNode = nodeDir !== null && sameFilesystem(nodeDir, tmp);
  const linkApi = apiDir !== null && sameFilesystem(apiDir, tmp);
  const blobPass = (late: boolean) =>
    fsBlobs ? takeFiles(out, blobsDir, `api/${BLOBS}`, { linkOk: linkApi, immutable: true, late, skip: ['.tmp'] }) : Promise.resolve();

  // Before the database: every layer and blob there is now.
  if (nodeDir) await takeLayers(out, nodeDir, linkNode, false);
  await blobPass(false);
  o.say(`layers and blobs: ${out.entries.length} (${mib(out.bytes())}), ${out.linked} hard-linked, checksummed (${at()})`);

  let database: Manifest['database'] = null;
  let keys: Manifest['masterKey'] = { included: false, from: 'no key', keys: [] };
  if (apiDir) {
    fs.mkdirSync(path.join(tmp, 'api'), { recursive: true, mode: 0o700 });
    const held = heldKeys(c, path.join(apiDir, KEY_FILE));
    let db: SqlExecutor;
    if (c.databaseUrl) {
      const file = path.join(tmp, 'api', PG_DUMP);
      await pgDump(c.databaseUrl, file);
      out.add({ path: `api/${PG_DUMP}`, kind: 'file', bytes: fs.statSync(file).size, digest: 'sha256', sum: await sha256File(file) }, false);
      db = openPostgres(c.databaseUrl);
    } else {
      const file = path.join(tmp, 'api', SQLITE_FILE);
      await copySqlite(path.join(apiDir, SQLITE_FILE), file);
      out.add({ path: `api/${SQLITE_FILE}`, kind: 'sqlite', bytes: fs.statSync(file).size, digest: 'sha256', sum: await sha256File(file) }, false);
      db = openSqliteCopy(file);
    }
    try {
      database = { kind: c.databaseUrl ? 'postgres' : 'sqlite', path: `api/${c.databaseUrl ? PG_DUMP : SQLITE_FILE}`, schema: await schemaVersions(db) };
      keys = { included: false, from: held.from, keys: await sealedUse(db, o.sealed, held.keys) };
    } finally {
      await db.close();
    }
    o.say(`database: ${database.kind}, ${mib(out.bytes(database.path))} (${at()})`);

    // Output being written is appended to, never linked; taken before the second blob pass, since a segment
    // sealed meanwhile is put in the blob store before its spool file goes.
    for (const name of API_COPIED) await takeFiles(out, path.join(apiDir, name), `api/${name}`, { linkOk: false, immutable: false, late: false });
    for (const name of axonFiles(apiDir)) {
      const file = path.join(tmp, 'api', AXONS, name);
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      await copySqlite(path.join(apiDir, AXONS, name), file);
      out.add({ path: `api/${AXONS}/${name}`, kind: 'sqlite', bytes: fs.statSync(file).size, digest: 'sha256', sum: await sha256File(file) }, false);
    }
    if (o.withMasterKey && held.keys.length) {
      writeKeyFile(path.join(tmp, 'api', KEY_FILE), held.keys);
      keys.included = true;
    }
  }

  // After the database: what was made while it was copied.
  if (nodeDir) await takeLayers(out, nodeDir, linkNode, true);
  await blobPass(true);
  // Directories made on the way get the owners and modes of the server's own (a restore copies them as they are).
  if (apiDir) await sameDirs(apiDir, path.join(tmp, 'api'));

  const owner = apiDir ? fs.statSync(apiDir) : null;
  const blobs = c.blob;
  return {
    format: FORMAT,
    version: FORMAT_VERSION,
    devboxd: o.version,
    createdAt: new Date().toISOString(),
    seconds: 0,
    role: src.role,
    node: c.nodeName,
    apiOwner: owner && { uid: owner.uid, gid: owner.gid },
    database,
    blobs: !apiDir
      ? null
      : blobs.backend === 'fs'
        ? { backend: 'fs', files: out.entries.filter((e) => e.path.startsWith(`api/${BLOBS}/`)).length, bytes: out.bytes(`api/${BLOBS}/`) }
        : {
            backend: 's3',
            bucket: blobs.bucket,
            prefix: blobs.prefix,
            endpoint: blobs.endpoint ?? null,
            note: "the blobs (objects, execution output, layers' archives) stay in the bucket: back it up with the bucket's own tools (versioning, replication)",
          },
    masterKey: keys,
    layers: [...out.layers].sort(),
    vanished: out.vanished.sort(),
    entries: out.entries.sort((a, b) => (a.path < b.path ? -1 : 1)),
  };
}

export const mib = (n: number) => (n >= 1 << 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`);
