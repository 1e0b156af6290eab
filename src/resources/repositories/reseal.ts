import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { ResealPage, SealedTexts } from '../../platform/sealing/resealing.js';
import type { Sealer } from '../../platform/sealing/sealer.js';
import { tokenAad } from './repository-service.js';

/**
 * Re-seals up to `limit` repository tokens not yet under `keyId` (after the cursor `after`), for `secrets
 * rotate-key`. Each write applies only over the text it read (a token replaced meanwhile was sealed under
 * the current key by its writer). A token that does not open stops the rotation, naming the connection.
 */
export async function resealRepositoryTokens(
  db: SqlExecutor,
  sealer: Pick<Sealer, 'open' | 'seal'>,
  keyId: string,
  after: string,
  limit: number,
): Promise<ResealPage> {
  const { rows } = await db.query<{ id: string; account_id: string; token_sealed: string }>(
    'SELECT id, account_id, token_sealed FROM repositories WHERE token_sealed IS NOT NULL AND token_sealed NOT LIKE ? AND id > ? ORDER BY id LIMIT ?',
    [`v1.${keyId}.%`, after, limit],
  );
  let n = 0;
  for (const r of rows) {
    const aad = tokenAad(r.account_id, r.id);
    let token: string;
    try {
      token = sealer.open(r.token_sealed, aad);
    } catch (err) {
      throw new Error(
        `the token of repository connection ${r.id} does not open: ${(err as Error).message}; the rotation stopped (what it re-sealed opens under the new key, and no key was dropped)`,
      );
    }
    const { rowCount } = await db.query('UPDATE repositories SET token_sealed = ? WHERE id = ? AND token_sealed = ?', [
      sealer.seal(token, aad),
      r.id,
      r.token_sealed,
    ]);
    n += rowCount;
  }
  return { n, last: rows.length < limit ? undefined : rows.at(-1)!.id };
}

/** How many repository tokens are sealed under `keyId`. */
export async function repositoryTokensUnder(db: SqlExecutor, keyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM repositories WHERE token_sealed LIKE ?', [`v1.${keyId}.%`]);
  return Number(rows[0]?.n ?? 0);
}

/** The repositories' sealed texts: their tokens (see SealedTexts). */
export const REPOSITORIES_SEALED: SealedTexts = { tables: ['repositories'], pages: [resealRepositoryTokens], countUnder: repositoryTokensUnder };
