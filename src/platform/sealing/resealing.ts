import type { SqlExecutor } from '../store/sql/executor.js';
import type { Sealer } from './sealer.js';

/** One page of a re-seal: how many texts it re-sealed, and the cursor to go on from (undefined: done). */
export interface ResealPage {
  n: number;
  last?: string;
}

/**
 * Re-seals up to `limit` texts not yet under `keyId`, after the cursor `after`, in the caller's transaction
 * (`secrets rotate-key` runs each page in its own short one).
 */
export type ResealPager = (db: SqlExecutor, sealer: Pick<Sealer, 'open' | 'seal'>, keyId: string, after: string, limit: number) => Promise<ResealPage>;

/**
 * What a module keeps sealed under the master key, for key rotation: the rotation re-seals every module's
 * texts without knowing any module (each declares this in its module description).
 */
export interface SealedTexts {
  /** The tables holding them: locked against writers for the rotation's last pass on PostgreSQL. */
  tables: readonly string[];
  /** One pager per kind of text, run in this order. */
  pages: readonly ResealPager[];
  /** How many texts are still sealed under `keyId` (a key may be dropped at 0). */
  countUnder(db: SqlExecutor, keyId: string): Promise<number>;
}
