import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import type { ResealPage, SealedTexts } from '../../platform/sealing/resealing.js';
import { gatewayHeaderAad } from './gateway-config-service.js';

/**
 * Re-seals up to `limit` of the boxes' gateway tokens not yet under `keyId` (after the cursor `after`), for
 * `secrets rotate-key`, which runs each page in its own short transaction. Each write applies only over the
 * text it read (a token swapped meanwhile was sealed under the current key by its writer). A token that does
 * not open is left alone: the box gets a new one at its next execution (GatewayBindings).
 */
export async function resealGatewayPage(
  db: SqlExecutor,
  sealer: Pick<Sealer, 'open' | 'seal'>,
  keyId: string,
  after: string,
  limit: number,
): Promise<ResealPage> {
  const { rows } = await db.query<{ id: string; token_sealed: string }>(
    "SELECT id, token_sealed FROM gateway_bindings WHERE token_sealed <> '' AND token_sealed NOT LIKE ? AND id > ? ORDER BY id LIMIT ?",
    [`v1.${keyId}.%`, after, limit],
  );
  let n = 0;
  for (const r of rows) {
    let token: string;
    try {
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
  return { n, last: rows.length < limit ? undefined : rows.at(-1)!.id };
}

/** Every page at once on `db` (a caller's transaction); how many tokens were re-sealed. */
export async function resealGatewayTokens(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string): Promise<number> {
  let n = 0;
  for (let page: ResealPage = { n: 0, last: '' }; page.last !== undefined; n += page.n) page = await resealGatewayPage(db, sealer, keyId, page.last, 500);
  return n;
}

/** How many gateway tokens and configs with header values are sealed under `keyId` (a key a prune would drop). */
export async function gatewaySealedUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM gateway_bindings WHERE token_sealed LIKE ?', [`v1.${keyId}.%`]);
  const configs = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM gateway_configs WHERE custom_headers LIKE ?', [`%"v1.${keyId}.%`]);
  return Number(rows[0]?.n ?? 0) + Number(configs.rows[0]?.n ?? 0);
}

interface StoredHeader {
  name: string;
  value: string | null;
  sealedValue?: string | null;
  secretId: string | null;
}

/**
 * Seals up to `limit` gateway configs' literal custom-header values (after the cursor `after`): values
 * stored in clear (rows an earlier version wrote; at every start, `keyId` undefined), and with `keyId`, for
 * `secrets rotate-key`, values sealed under another key. Each write applies only over the text it read (a
 * config updated meanwhile was sealed by its writer); a value that does not open is left as it is (the
 * gateway answers 502 naming the header).
 */
export async function resealGatewayHeadersPage(
  db: SqlExecutor,
  sealer: Pick<Sealer, 'open' | 'seal'>,
  keyId: string | undefined,
  after: string,
  limit: number,
): Promise<ResealPage> {
  const { rows } = await db.query<{ id: string; custom_headers: string }>(
    "SELECT id, custom_headers FROM gateway_configs WHERE custom_headers <> '[]' AND id > ? ORDER BY id LIMIT ?",
    [after, limit],
  );
  let n = 0;
  for (const r of rows) {
    let changed = false;
    const next = (JSON.parse(r.custom_headers) as StoredHeader[]).map((h): StoredHeader => {
      const aad = gatewayHeaderAad(r.id, h.name);
      if (h.value !== null && h.value !== undefined) {
        changed = true;
        return { name: h.name, value: null, sealedValue: sealer.seal(h.value, aad), secretId: null };
      }
      if (!keyId || !h.sealedValue || h.sealedValue.startsWith(`v1.${keyId}.`)) return h;
      try {
        const sealedValue = sealer.seal(sealer.open(h.sealedValue, aad), aad);
        changed = true;
        return { ...h, sealedValue };
      } catch {
        return h;
      }
    });
    if (!changed) continue;
    const { rowCount } = await db.query('UPDATE gateway_configs SET custom_headers = ? WHERE id = ? AND custom_headers = ?', [
      JSON.stringify(next),
      r.id,
      r.custom_headers,
    ]);
    n += rowCount;
  }
  return { n, last: rows.length < limit ? undefined : rows.at(-1)!.id };
}

/** Every page at once on `db` (a caller's transaction): at start, values in clear are sealed. */
export async function sealGatewayHeaders(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId?: string): Promise<number> {
  let n = 0;
  for (let page: ResealPage = { n: 0, last: '' }; page.last !== undefined; n += page.n)
    page = await resealGatewayHeadersPage(db, sealer, keyId, page.last, 500);
  return n;
}

/** The gateway's sealed texts: the boxes' tokens and the configs' header values (see SealedTexts). */
export const GATEWAY_SEALED: SealedTexts = {
  tables: ['gateway_bindings', 'gateway_configs'],
  pages: [resealGatewayPage, resealGatewayHeadersPage],
  countUnder: gatewaySealedUnder,
};
