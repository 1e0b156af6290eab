import type { Store } from '../../platform/store/types.js';
import {
  ensureKeyFile,
  generateKey,
  KeyError,
  parseKey,
  readKeyFile,
  StaticKeys,
  writeKeyFile,
  type MasterKey,
} from './master-key.js';
import { resealGatewayTokens, sealGatewayHeaders } from '../gateway-configs/reseal.js';
import { resealMcp } from '../mcp-configs/reseal.js';
import { Sealer } from './sealer.js';
import { aadOf } from './secret-service.js';
import { SqlSecretStore } from './sql-secret-store.js';

export interface RotateOptions {
  dataDir: string;
  /** DEVBOXD_SECRET_KEY and DEVBOXD_SECRET_KEY_PREVIOUS, as the servers have them. */
  secretKey?: string;
  previousKeys?: string[];
  /** The key to rotate to (base64); absent: a fresh one with the key file, the current key with DEVBOXD_SECRET_KEY. */
  newKey?: string;
}

export interface RotateResult {
  keyId: string;
  resealed: number;
  /** What the operator still has to do (servers configured through the environment). */
  notes: string[];
}

const BATCH = 500;

/**
 * Re-encrypts every secret under one key. With the key file (`<data>/secret.key`), the new key is first
 * written in front of the old ones, so servers reading the file seal under it and still open the old
 * values; then every value is re-sealed in one transaction; then the old keys leave the file. Servers
 * running beside it re-read the file, so they keep working throughout. With DEVBOXD_SECRET_KEY the servers'
 * keys come from their environment: restart them with the new key as DEVBOXD_SECRET_KEY and the old one in
 * DEVBOXD_SECRET_KEY_PREVIOUS, run this with the same variables (it rotates to the current key), then drop
 * DEVBOXD_SECRET_KEY_PREVIOUS.
 */
export async function rotateKey(store: Store, opts: RotateOptions): Promise<RotateResult> {
  const notes: string[] = [];
  const requested = opts.newKey ? parseKey(opts.newKey, 'the new key') : undefined;
  let known: MasterKey[];
  let target: MasterKey;
  let file: string | undefined;
  if (opts.secretKey) {
    const current = parseKey(opts.secretKey, 'DEVBOXD_SECRET_KEY');
    const previous = (opts.previousKeys ?? []).map((k, i) => parseKey(k, `key ${i + 1} of DEVBOXD_SECRET_KEY_PREVIOUS`));
    target = requested ?? current;
    known = [current, ...previous];
    if (target.id !== current.id) notes.push('restart every server with the new key as DEVBOXD_SECRET_KEY: until then they cannot open the secrets');
    else if (previous.length) notes.push('DEVBOXD_SECRET_KEY_PREVIOUS is no longer needed: no secret is sealed under it');
  } else {
    file = ensureKeyFile(opts.dataDir);
    known = readKeyFile(file);
    target = requested ?? generateKey();
    writeKeyFile(file, [target, ...known.filter((k) => k.id !== target.id)]);
  }
  const sealer = new Sealer(new StaticKeys(target, known));
  let resealed = 0;
  // A value written meanwhile by a server that had not re-read the key file yet is under an old key: go again.
  for (let round = 0; ; round++) {
    const n = await store.transaction(async (tx) => {
      const secrets = new SqlSecretStore(tx.db);
      let count = 0;
      let after = '';
      for (;;) {
        const batch = await secrets.sealedUnder(target.id, after, BATCH);
        if (!batch.length) return count;
        for (const r of batch) {
          const aad = aadOf(r.accountId, r.id);
          let plain: string;
          try {
            plain = sealer.open(r.sealedValue, aad);
          } catch (err) {
            throw new KeyError(`secret ${r.name} (${r.id}) of account ${r.accountId} does not open: ${(err as Error).message}; nothing was changed`);
          }
          if (await secrets.reseal(r.id, r.sealedValue, sealer.seal(plain, aad), target.id)) count++;
        }
        after = batch.at(-1)!.id;
      }
    });
    resealed += n;
    const left = [...(await new SqlSecretStore(store.db).keyIds()).entries()].filter(([id]) => id !== target.id);
    if (!left.length) break;
    if (round >= 5) throw new KeyError(`secrets are still being written under older keys (${left.map(([id]) => id).join(', ')}); run the rotation again`);
  }
  // What the MCP module keeps sealed (box tokens, literal header values) goes under the new key too.
  resealed += await store.transaction((tx) => resealMcp(tx.db, sealer, target.id));
  // And the agent gateway's box tokens and literal header values.
  resealed += await store.transaction((tx) => resealGatewayTokens(tx.db, sealer, target.id));
  resealed += await store.transaction((tx) => sealGatewayHeaders(tx.db, sealer, target.id));
  if (file) writeKeyFile(file, [target]);
  return { keyId: target.id, resealed, notes };
}
