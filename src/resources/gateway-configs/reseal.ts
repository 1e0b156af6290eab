import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { Sealer } from '../secrets/sealer.js';
import { gatewayHeaderAad } from './gateway-config-service.js';

/**
 * Re-seals the boxes' gateway tokens under `keyId`, for `secrets rotate-key` (in its transaction, after the
 * secrets), so no token is left under a key the rotation drops. Each write applies only over the text it
 * read (a token swapped meanwhile was sealed under the current key by its writer). A token that does not
 * open is left alone: the box gets a new one at its next execution (GatewayBindings). Returns how many.
 */
export async function resealGatewayTokens(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string): Promise<number> {
  let n = 0;
  const { rows } = await db.query<{ id: string; token_sealed: string }>("SELECT id, token_sealed FROM gateway_bindings WHERE token_sealed <> ''");
  for (const r of rows) {
    let token: string;
    try {
      if (Sealer.keyIdOf(r.token_sealed) === keyId) continue;
      token = sealer.open(r.token_sealed, r.id);
    } catch {
      continue;
    }
    const { rowCount } = await db.query('UPDATE gateway_bindings SET token_sealed = ? WHERE id = ? AND token_sealed = ?', [
      sealer.seal(token, r.id),
      r.id,
      r.token_sealed,
    ]);
    n += rowCount;
  }
  return n;
}

/**
 * Seals the literal custom-header values of gateway configs: values stored in clear (rows written before
 * values were sealed) at every start, and with `keyId`, for `secrets rotate-key`, values sealed under another
 * key. Each write applies only over the text it read (a config updated meanwhile was sealed by its writer);
 * a value that does not open is left as it is (the gateway answers 502 naming the header). Returns how many
 * configs were written.
 */
export async function sealGatewayHeaders(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId?: string): Promise<number> {
  let n = 0;
  const { rows } = await db.query<{ id: string; custom_headers: string }>("SELECT id, custom_headers FROM gateway_configs WHERE custom_headers <> '[]'");
  for (const r of rows) {
    const headers = JSON.parse(r.custom_headers) as { name: string; value: string | null; sealedValue?: string | null; secretId: string | null }[];
    let changed = false;
    const next = headers.map((h) => {
      const aad = gatewayHeaderAad(r.id, h.name);
      if (h.value !== null && h.value !== undefined) {
        changed = true;
        return { name: h.name, value: null, sealedValue: sealer.seal(h.value, aad), secretId: null };
      }
      if (!keyId || !h.sealedValue) return h;
      try {
        if (Sealer.keyIdOf(h.sealedValue) === keyId) return h;
        const sealedValue = sealer.seal(sealer.open(h.sealedValue, aad), aad);
        changed = true;
        return { ...h, sealedValue };
      } catch {
        return h;
      }
    });
    if (!changed) continue;
    const { rowCount } = await db.query('UPDATE gateway_configs SET custom_headers = ? WHERE id = ? AND custom_headers = ?', [JSON.stringify(next), r.id, r.custom_headers]);
    n += rowCount;
  }
  return n;
}
