import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { Sealer } from '../secrets/sealer.js';

/**
 * Re-seals the boxes' gateway tokens under `keyId`, for `secrets rotate-key` (in its transaction, after the
 * secrets), so no token is left under a key the rotation drops. Each write applies only over the text it
 * read (a token swapped meanwhile was sealed under the current key by its writer). A token that does not
 * open is left alone: the box gets a new one at its next execution (GatewayBindings). Returns how many.
 */
export async function resealGatewayTokens(db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string): Promise<number> {
  let n = 0;
  const { rows } = await db.query<{ id: string; token_sealed: string }>('SELECT id, token_sealed FROM gateway_bindings');
  for (const r of rows) {
    if (Sealer.keyIdOf(r.token_sealed) === keyId) continue;
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
  return n;
}
