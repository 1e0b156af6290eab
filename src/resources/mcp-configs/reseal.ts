import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { Sealer } from '../secrets/sealer.js';
import { headerAad } from './mcp-config-service.js';
import { tokenAad } from './mcp-tokens.js';
import type { StoredHeader } from './types.js';

/**
 * Re-seals what the MCP module keeps sealed (box tokens, literal custom header values) under `keyId`, for
 * `secrets rotate-key`: run in its transaction after the secrets, so no sealed text is left under a key the
 * rotation drops. Each write is conditional on the text it replaces (a row changed meanwhile is left to the
 * writer, who sealed it under the current key). A text that does not open is left as it is, so one bad row
 * does not stop the rotation: a token then goes from the box's environment (logged), a header value gives
 * the box an MCP error naming the config. Returns how many texts were re-sealed.
 */
export async function resealMcp(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string): Promise<number> {
  let n = 0;
  const under = (sealed: string) => {
    try {
      return Sealer.keyIdOf(sealed) === keyId;
    } catch {
      return false; // not a sealed text: `again` passes over it
    }
  };
  const tokens = await db.query<{ hash: string; devbox_id: string; env_name: string; sealed: string }>(
    'SELECT hash, devbox_id, env_name, sealed FROM mcp_tokens WHERE sealed IS NOT NULL',
  );
  for (const t of tokens.rows) {
    if (under(t.sealed)) continue;
    const aad = tokenAad(t.devbox_id, t.env_name);
    const resealed = again(sealer, t.sealed, aad);
    if (!resealed) continue;
    const { rowCount } = await db.query('UPDATE mcp_tokens SET sealed = ? WHERE hash = ? AND sealed = ?', [resealed, t.hash, t.sealed]);
    n += rowCount;
  }
  const configs = await db.query<{ id: string; custom_headers: string }>("SELECT id, custom_headers FROM mcp_configs WHERE custom_headers LIKE '%sealedValue%'");
  for (const c of configs.rows) {
    const headers = JSON.parse(c.custom_headers) as StoredHeader[];
    let changed = 0;
    const next = headers.map((h) => {
      if (!h.sealedValue || under(h.sealedValue)) return h;
      const sealedValue = again(sealer, h.sealedValue, headerAad(c.id, h.name));
      if (!sealedValue) return h;
      changed++;
      return { ...h, sealedValue };
    });
    if (!changed) continue;
    const { rowCount } = await db.query('UPDATE mcp_configs SET custom_headers = ? WHERE id = ? AND custom_headers = ?', [JSON.stringify(next), c.id, c.custom_headers]);
    if (rowCount) n += changed;
  }
  return n;
}

/** The text sealed again under the current key, or undefined when it does not open. */
function again(sealer: Pick<Sealer, 'open' | 'seal'>, sealed: string, aad: string): string | undefined {
  try {
    return sealer.seal(sealer.open(sealed, aad), aad);
  } catch {
    return undefined;
  }
}
