/**
 * The master key and a backup. A backup records which keys its database's sealed texts (secret values, MCP and
 * gateway tokens, image passwords) are under, by key id (a hash that names a key, never reveals it), and holds
 * no key unless `--with-master-key`. A restore checks that the server it makes will hold every one of them,
 * before it writes anything, and says which is missing.
 */
import fs from 'node:fs';
import type { Config } from '../../config.js';
import { type MasterKey, parseKey, readKeyFile } from '../../platform/sealing/master-key.js';
import type { SealedTexts } from '../../platform/sealing/resealing.js';
import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { KeyUse } from './manifest.js';

export interface HeldKeys {
  keys: MasterKey[];
  /** Where they come from, for messages: DEVBOXD_SECRET_KEY, a file, or nothing. */
  from: string;
}

/** The keys a server with these settings holds: DEVBOXD_SECRET_KEY (and _PREVIOUS) when set, else the key file. */
export function heldKeys(c: Pick<Config, 'secretKey' | 'secretKeyPrevious'>, keyFile: string | undefined): HeldKeys {
  if (c.secretKey) {
    const previous = c.secretKeyPrevious.map((k, i) => parseKey(k, `key ${i + 1} of DEVBOXD_SECRET_KEY_PREVIOUS`));
    return { keys: [parseKey(c.secretKey, 'DEVBOXD_SECRET_KEY'), ...previous], from: 'DEVBOXD_SECRET_KEY' };
  }
  if (keyFile === undefined || !fs.existsSync(keyFile)) return { keys: [], from: 'no key' };
  return { keys: readKeyFile(keyFile), from: keyFile };
}

/** How many sealed texts the database holds under each of `keys`. */
export async function sealedUse(db: SqlExecutor, sealed: readonly SealedTexts[], keys: readonly MasterKey[]): Promise<KeyUse[]> {
  const uses: KeyUse[] = [];
  for (const k of keys) {
    let n = 0;
    for (const t of sealed) n += await t.countUnder(db, k.id);
    uses.push({ id: k.id, sealed: n });
  }
  return uses;
}

/**
 * Why a server holding `held` would not open the backup's sealed texts, or null when it would. The ids are
 * those the backup recorded; a text under a key the backing-up command did not hold is not counted.
 */
export function keyProblem(uses: readonly KeyUse[], held: HeldKeys): string | null {
  const ids = new Set(held.keys.map((k) => k.id));
  const missing = uses.filter((u) => u.sealed > 0 && !ids.has(u.id));
  if (!missing.length) return null;
  const needed = missing.map((u) => `${u.sealed} under master key ${u.id}`).join(', ');
  const have = held.keys.length ? `${held.from} holds ${held.keys.map((k) => `key ${k.id}`).join(', ')}` : 'no key was given';
  return (
    `the backup's sealed values (secrets, tokens) would not open: ${needed}; ${have}. Give that key: ` +
    '--key-file FILE (a copy of the old <data>/api/secret.key) or DEVBOXD_SECRET_KEY, or back up with --with-master-key; ' +
    '--ignore-master-key restores without them opening (each must then be set again)'
  );
}

/** The key file's text for `keys`, current first (what master-key.ts reads). */
export function keyFileText(keys: readonly MasterKey[]): string {
  return keys.map((k) => `${k.key.toString('base64')}\n`).join('');
}
