import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { flockFile } from '../../lib/data-dir-lock.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { Store } from '../../platform/store/types.js';
import type { ResealPage, SealedTexts } from '../../platform/sealing/resealing.js';
import { ensureKeyFile, generateKey, KeyError, parseKey, readKeyFile, StaticKeys, writeKeyFile, type MasterKey } from '../../platform/sealing/master-key.js';
import { Sealer } from '../../platform/sealing/sealer.js';
import { aadOf } from './secret-service.js';
import { SqlSecretStore } from './sql-secret-store.js';

export interface RotateOptions {
  dataDir: string;
  /** DEVBOXD_SECRET_KEY and DEVBOXD_SECRET_KEY_PREVIOUS, as the servers have them. */
  secretKey?: string;
  previousKeys?: string[];
  /** The key to rotate to (base64); absent: a fresh one with the key file, the current key with DEVBOXD_SECRET_KEY. */
  newKey?: string;
  /** Sealed texts per transaction: each holds the write lock this long only (SQLite: the servers' writes wait). */
  batch?: number;
  /** Prune: a key retired less than this long ago stays (a writer may still hold a value sealed under it). */
  retiredGraceMs?: number;
  /** Every module's sealed texts (resources/index.ts: SEALED); the secrets themselves are this module's. */
  sealed: readonly SealedTexts[];
}

export interface RotateResult {
  keyId: string;
  resealed: number;
  /** Key ids the prune removed from the key file (or that DEVBOXD_SECRET_KEY_PREVIOUS may drop). */
  dropped: string[];
  /** What the operator still has to do. */
  notes: string[];
}

const BATCH = 100;
const RETIRED_GRACE_MS = 60_000;
export const ROTATION_LOCK = 'secret.key.lock';

/**
 * Re-encrypts every sealed text (secrets, the MCP module's tokens and header values, gateway tokens, the
 * image passwords of blueprint services, repository tokens) under
 * one key, a page at a time, each page its own short transaction with a pause after it, so servers writing
 * beside it (SQLite's single writer) wait milliseconds, not the whole rotation. With the key file, the new key
 * is first written in front of the old ones, which stay in the file as retired keys: servers reading it seal
 * under the new key and still open the old values, and a value a server sealed just before the rotation and
 * writes after it still opens. Retired keys leave only through `pruneKeys`. With DEVBOXD_SECRET_KEY the
 * servers' keys come from their environment (README: the two-phase procedure); this rotates to the current
 * key. One rotation at a time per key file: a second one is refused (flock on `<data>/secret.key.lock`).
 */
export async function rotateKey(store: Store, opts: RotateOptions): Promise<RotateResult> {
  return exclusive(opts, async (file) => {
    const notes: string[] = [];
    const requested = opts.newKey ? parseKey(opts.newKey, 'the new key') : undefined;
    let known: MasterKey[];
    let target: MasterKey;
    if (!file) {
      const current = parseKey(opts.secretKey!, 'DEVBOXD_SECRET_KEY');
      const previous = (opts.previousKeys ?? []).map((k, i) => parseKey(k, `key ${i + 1} of DEVBOXD_SECRET_KEY_PREVIOUS`));
      target = requested ?? current;
      known = [current, ...previous];
      if (target.id !== current.id) notes.push('restart every server with the new key as DEVBOXD_SECRET_KEY: until then they cannot open the secrets');
      else if (previous.length)
        notes.push(
          'once every server runs with this DEVBOXD_SECRET_KEY, run `devboxd secrets rotate-key --prune` to check that DEVBOXD_SECRET_KEY_PREVIOUS can go',
        );
    } else {
      known = readKeyFile(file);
      target = requested ?? generateKey();
      writeKeyFile(file, [target, ...known.filter((k) => k.id !== target.id)]);
      const retired = known.filter((k) => k.id !== target.id).map((k) => k.id);
      if (retired.length)
        notes.push(`retired keys ${retired.join(', ')} stay in ${file} for opening; drop them later with \`devboxd secrets rotate-key --prune\``);
    }
    const sealer = new Sealer(new StaticKeys(target, known));
    const resealed = await resealEverything(store, opts.sealed, sealer, target.id, opts.batch ?? BATCH);
    return { keyId: target.id, resealed, dropped: [], notes };
  });
}

/**
 * Drops retired keys: re-seals what is still under them (pages, then the last ones under the write lock),
 * then, under the write lock (SQLite BEGIN IMMEDIATE, PostgreSQL SHARE ROW EXCLUSIVE on every table that
 * holds sealed texts), checks that no row names them and rewrites the key file before letting go. A key
 * retired less than `retiredGraceMs` ago stays: a server may have sealed a value under it before the
 * rotation and not written it yet.
 */
export async function pruneKeys(store: Store, opts: RotateOptions): Promise<RotateResult> {
  return exclusive(opts, async (file) => {
    let known: MasterKey[];
    if (file) {
      known = readKeyFile(file);
      const age = Date.now() - fs.statSync(file).mtimeMs;
      const grace = opts.retiredGraceMs ?? RETIRED_GRACE_MS;
      if (known.length > 1 && age < grace) {
        throw new KeyError(
          `the keys in ${file} were retired ${Math.round(age / 1000)} s ago; a server may still be writing a value sealed under them: run --prune again in ${Math.ceil((grace - age) / 1000)} s`,
        );
      }
    } else {
      known = [
        parseKey(opts.secretKey!, 'DEVBOXD_SECRET_KEY'),
        ...(opts.previousKeys ?? []).map((k, i) => parseKey(k, `key ${i + 1} of DEVBOXD_SECRET_KEY_PREVIOUS`)),
      ];
    }
    const [current, ...retired] = known as [MasterKey, ...MasterKey[]];
    const sealer = new Sealer(new StaticKeys(current, retired));
    let resealed = await resealEverything(store, opts.sealed, sealer, current.id, opts.batch ?? BATCH);
    for (let round = 0; ; round++) {
      resealed += await store.transaction(async (tx) => (await lockSealed(tx.db, opts.sealed), resealAll(tx.db, opts.sealed, sealer, current.id, BATCH)));
      const left = await store.transaction(async (tx) => {
        await lockSealed(tx.db, opts.sealed);
        const counts = await Promise.all(retired.map(async (k) => [k.id, await sealedUnder(tx.db, opts.sealed, k.id)] as const));
        const inUse = counts.filter(([, n]) => n > 0);
        if (!inUse.length && file) writeKeyFile(file, [current]);
        return inUse;
      });
      if (!left.length) break;
      if (round >= 3) throw new KeyError(`texts are still sealed under retired keys (${left.map(([id, n]) => `${id}: ${n}`).join(', ')}); nothing was dropped`);
    }
    const dropped = retired.map((k) => k.id);
    const notes = !file && dropped.length ? ['no row is sealed under DEVBOXD_SECRET_KEY_PREVIOUS: drop it from every server'] : [];
    return { keyId: current.id, resealed, dropped, notes };
  });
}

/** Runs `fn` holding the rotation lock beside the key file (key-file mode); `fn` gets the key file then. */
async function exclusive<T>(opts: RotateOptions, fn: (file: string | undefined) => Promise<T>): Promise<T> {
  if (opts.secretKey) return fn(undefined);
  const file = ensureKeyFile(opts.dataDir);
  const lockFile = path.join(path.dirname(file), ROTATION_LOCK);
  const lock = await flockFile(lockFile);
  if ('busy' in lock) {
    throw new KeyError(
      `another \`devboxd secrets rotate-key\`${lock.busy ? ` (pid ${lock.busy})` : ''} is running on ${file} (lock: ${lockFile}); wait for it to finish`,
    );
  }
  try {
    return await fn(file);
  } finally {
    await lock.release();
  }
}

/** Every page of every table, each page in its own transaction, pausing as long as it took between pages. */
async function resealEverything(store: Store, sealed: readonly SealedTexts[], sealer: Sealer, keyId: string, batch: number): Promise<number> {
  let n = 0;
  for (const page of sealed.flatMap((t) => t.pages)) {
    for (let after: string | undefined = ''; after !== undefined; ) {
      const started = performance.now();
      const r: ResealPage = await store.transaction((tx) => page(tx.db, sealer, keyId, after!, batch));
      n += r.n;
      after = r.last;
      await sleep(Math.max(5, 2 * (performance.now() - started)));
    }
  }
  return n;
}

/** Every page of every table on one executor (a transaction already holding the write lock). */
async function resealAll(db: SqlExecutor, sealed: readonly SealedTexts[], sealer: Sealer, keyId: string, batch: number): Promise<number> {
  let n = 0;
  for (const page of sealed.flatMap((t) => t.pages)) {
    for (let r: ResealPage = { n: 0, last: '' }; r.last !== undefined; n += r.n) r = await page(db, sealer, keyId, r.last, batch);
  }
  return n;
}

/** Blocks every writer of sealed texts until the transaction ends (SQLite's BEGIN IMMEDIATE already does). */
async function lockSealed(db: SqlExecutor, sealed: readonly SealedTexts[]): Promise<void> {
  if (db.dialect === 'postgres') await db.query(`LOCK TABLE ${sealed.flatMap((t) => t.tables).join(', ')} IN SHARE ROW EXCLUSIVE MODE`);
}

async function sealedUnder(db: SqlExecutor, sealed: readonly SealedTexts[], keyId: string): Promise<number> {
  let n = 0;
  for (const t of sealed) n += await t.countUnder(db, keyId);
  return n;
}

/** A page of secrets not under `keyId`; a value that opens under no key held stops the rotation, naming it. */
async function resealSecrets(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const secrets = new SqlSecretStore(db);
  const batch = await secrets.sealedUnder(keyId, after, limit);
  let n = 0;
  for (const r of batch) {
    const aad = aadOf(r.accountId, r.id);
    let plain: string;
    try {
      plain = sealer.open(r.sealedValue, aad);
    } catch (err) {
      throw new KeyError(
        `secret ${r.name} (${r.id}) of account ${r.accountId} does not open: ${(err as Error).message}; the rotation stopped (what it re-sealed opens under the new key, and no key was dropped)`,
      );
    }
    if (await secrets.reseal(r.id, r.sealedValue, sealer.seal(plain, aad), keyId)) n++;
  }
  return { n, last: batch.length < limit ? undefined : batch.at(-1)!.id };
}

/** The secrets' own sealed texts (see SealedTexts). */
export const SECRETS_SEALED: SealedTexts = {
  tables: ['secrets'],
  pages: [resealSecrets],
  countUnder: async (db, keyId) => (await new SqlSecretStore(db).keyIds()).get(keyId) ?? 0,
};
