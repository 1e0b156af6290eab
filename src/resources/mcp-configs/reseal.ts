import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { headerAad } from './mcp-config-service.js';
import { tokenAad } from './mcp-tokens.js';
import type { StoredHeader } from './types.js';

import type { ResealPage, SealedTexts } from '../../platform/sealing/resealing.js';

type Opener = Pick<Sealer, 'open' | 'seal'>;

/**
 * Re-seals up to `limit` of the MCP module's box tokens not yet under `keyId` (after the cursor `after`),
 * for `secrets rotate-key`, which runs each page in its own short transaction. Each write is conditional on
 * the text it replaces (a row changed meanwhile is left to its writer, who sealed it under the current key).
 * A text that does not open is passed over, so one bad row does not stop the rotation: such a token goes
 * from the box's environment (logged), such a header value gives the box an MCP error naming the config.
 */
export async function resealMcpTokens(db: SqlExecutor, sealer: Opener, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const { rows } = await db.query<{ hash: string; devbox_id: string; env_name: string; sealed: string }>(
    'SELECT hash, devbox_id, env_name, sealed FROM mcp_tokens WHERE sealed IS NOT NULL AND sealed NOT LIKE ? AND hash > ? ORDER BY hash LIMIT ?',
    [`v1.${keyId}.%`, after, limit],
  );
  let n = 0;
  for (const t of rows) {
    const resealed = again(sealer, t.sealed, tokenAad(t.devbox_id, t.env_name));
    if (!resealed) continue;
    const { rowCount } = await db.query('UPDATE mcp_tokens SET sealed = ? WHERE hash = ? AND sealed = ?', [resealed, t.hash, t.sealed]);
    n += rowCount;
  }
  return { n, last: rows.length < limit ? undefined : rows.at(-1)!.hash };
}

/** The same for the literal custom header values of MCP configs (sealed inside the headers' JSON). */
export async function resealMcpHeaders(db: SqlExecutor, sealer: Opener, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const { rows } = await db.query<{ id: string; custom_headers: string }>(
    "SELECT id, custom_headers FROM mcp_configs WHERE custom_headers LIKE '%sealedValue%' AND id > ? ORDER BY id LIMIT ?",
    [after, limit],
  );
  let n = 0;
  for (const c of rows) {
    const headers = JSON.parse(c.custom_headers) as StoredHeader[];
    let changed = 0;
    const next = headers.map((h) => {
      if (!h.sealedValue || h.sealedValue.startsWith(`v1.${keyId}.`)) return h;
      const sealedValue = again(sealer, h.sealedValue, headerAad(c.id, h.name));
      if (!sealedValue) return h;
      changed++;
      return { ...h, sealedValue };
    });
    if (!changed) continue;
    const { rowCount } = await db.query('UPDATE mcp_configs SET custom_headers = ? WHERE id = ? AND custom_headers = ?', [
      JSON.stringify(next),
      c.id,
      c.custom_headers,
    ]);
    if (rowCount) n += changed;
  }
  return { n, last: rows.length < limit ? undefined : rows.at(-1)!.id };
}

/** Every page of both at once on `db` (a caller's transaction); how many texts were re-sealed. */
export async function resealMcp(db: SqlExecutor, sealer: Opener, keyId: string): Promise<number> {
  let n = 0;
  for (const page of [resealMcpTokens, resealMcpHeaders]) {
    for (let r: ResealPage = { n: 0, last: '' }; r.last !== undefined; n += r.n) r = await page(db, sealer, keyId, r.last, 500);
  }
  return n;
}

/** The text sealed again under the current key, or undefined when it does not open. */
function again(sealer: Opener, sealed: string, aad: string): string | undefined {
  try {
    return sealer.seal(sealer.open(sealed, aad), aad);
  } catch {
    return undefined;
  }
}

/** How many sealed texts of the MCP module are under `keyId` (a key a prune would drop). */
export async function mcpSealedUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const tokens = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM mcp_tokens WHERE sealed LIKE ?', [`v1.${keyId}.%`]);
  const configs = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM mcp_configs WHERE custom_headers LIKE ?', [`%"v1.${keyId}.%`]);
  return Number(tokens.rows[0]?.n ?? 0) + Number(configs.rows[0]?.n ?? 0);
}

/** The MCP module's sealed texts: box tokens and header values (see SealedTexts). */
export const MCP_SEALED: SealedTexts = { tables: ['mcp_tokens', 'mcp_configs'], pages: [resealMcpTokens, resealMcpHeaders], countUnder: mcpSealedUnder };
