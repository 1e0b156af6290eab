import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { Sealer } from '../secrets/sealer.js';
import type { ResealPage } from '../mcp-configs/reseal.js';

/**
 * Re-seals up to `limit` of the boxes' gateway tokens not yet under `keyId` (after the cursor `after`), for
 * `secrets rotate-key`, which runs each page in its own short transaction. Each write applies only over the
 * text it read (a token swapped meanwhile was sealed under the current key by its writer). A token that does
 * not open is left alone: the box gets a new one at its next execution (GatewayBindings).
 */
export async function resealGatewayPage(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string, after: string, limit: number): Promise<ResealPage> {
  const { rows } = await db.query<{ id: string; token_sealed: string }>(
    'SELECT id, token_sealed FROM gateway_bindings WHERE token_sealed NOT LIKE ? AND id > ? ORDER BY id LIMIT ?',
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

/** How many gateway tokens are sealed under `keyId` (a key a prune would drop). */
export async function gatewaySealedUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM gateway_bindings WHERE token_sealed LIKE ?', [`v1.${keyId}.%`]);
  return Number(rows[0]?.n ?? 0);
}
