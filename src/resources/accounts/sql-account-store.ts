import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import { paginate } from '../../platform/store/sql/paginate.js';
import type { Account, AccountStore, ApiKey, Page, PageQuery } from '../../platform/store/types.js';

interface KeyRow {
  id: string;
  account_id: string;
  name: string | null;
  kind: 'standard' | 'restricted';
  secret_hash: string;
  scopes: string;
  expires_at_ms: number | null;
  create_time_ms: number;
  revoked_at_ms: number | null;
  secret_last4: string | null;
}

interface AccountRow {
  id: string;
  name: string;
  create_time_ms: number;
}

const toKey = (r: KeyRow): ApiKey => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  kind: r.kind,
  secretHash: r.secret_hash,
  scopes: JSON.parse(r.scopes),
  expiresAtMs: r.expires_at_ms,
  createTimeMs: r.create_time_ms,
  revokedAtMs: r.revoked_at_ms,
  secretLast4: r.secret_last4,
});

const KEY_COLUMNS: (keyof KeyRow)[] = [
  'id',
  'account_id',
  'name',
  'kind',
  'secret_hash',
  'scopes',
  'expires_at_ms',
  'create_time_ms',
  'revoked_at_ms',
  'secret_last4',
];

/**
 * For another module's statement that reads the request's key too (joined by `secret_hash`): the select
 * list of `alias`'s key columns under names no other table uses (`key_<column>`), and the key of such a row
 * (undefined when the join found none).
 */
const JOINED = KEY_COLUMNS.map((c) => [c, `key_${c}`] as const);
export const keyJoin = {
  select: (alias: string) => JOINED.map(([c, as]) => `${alias}.${c} AS ${as}`).join(', '),
  from(row: Record<string, unknown>): ApiKey | undefined {
    if (row.key_id == null) return undefined;
    const key: Record<string, unknown> = {};
    for (const [c, as] of JOINED) key[c] = row[as];
    return toKey(key as unknown as KeyRow);
  },
};

const toAccount = (r: AccountRow): Account => ({ id: r.id, name: r.name, createTimeMs: r.create_time_ms });

/**
 * Revocations this process made, on any connection. SQLite's `data_version` changes only for commits of
 * other connections, so a connection's own count here (bumped once the statement has run; a transaction's
 * later commit is covered too, as statements from outside it wait for it to end). Inserting a key changes
 * no key already read, so it is not counted.
 */
let ownKeyWrites = 0;

export class SqlAccountStore implements AccountStore {
  constructor(private readonly db: SqlExecutor) {}

  async createAccount(a: Account): Promise<void> {
    await this.db.query('INSERT INTO accounts (id, name, create_time_ms) VALUES (?, ?, ?)', [a.id, a.name, a.createTimeMs]);
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const { rows } = await this.db.query<AccountRow>('SELECT * FROM accounts WHERE id = ?', [id]);
    return rows[0] && toAccount(rows[0]);
  }

  async findAccountByName(name: string): Promise<Account | undefined> {
    const { rows } = await this.db.query<AccountRow>('SELECT * FROM accounts WHERE name = ? ORDER BY id LIMIT 1', [name]);
    return rows[0] && toAccount(rows[0]);
  }

  async countKeys(): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys');
    return Number(rows[0]!.n);
  }

  async insertKey(k: ApiKey): Promise<void> {
    await this.insert('', k);
  }

  async insertKeyIfAbsent(k: ApiKey): Promise<boolean> {
    return (await this.insert(' ON CONFLICT DO NOTHING', k)) > 0;
  }

  // Every authenticated request runs this lookup: one indexed statement, prepared once (SQLite) per text.
  async findKeyByHash(hash: string): Promise<ApiKey | undefined> {
    const { rows } = await this.db.query<KeyRow>('SELECT * FROM api_keys WHERE secret_hash = ?', [hash]);
    return rows[0] && toKey(rows[0]);
  }

  async getKey(id: string): Promise<ApiKey | undefined> {
    const { rows } = await this.db.query<KeyRow>('SELECT * FROM api_keys WHERE id = ?', [id]);
    return rows[0] && toKey(rows[0]);
  }

  listKeys(accountId: string, page: PageQuery): Promise<Page<ApiKey>> {
    return paginate(this.db, 'api_keys', ['account_id = ?', 'revoked_at_ms IS NULL'], [accountId], page, toKey);
  }

  async revokeKey(id: string, atMs: number): Promise<boolean> {
    try {
      const r = await this.db.query('UPDATE api_keys SET revoked_at_ms = ? WHERE id = ? AND revoked_at_ms IS NULL', [atMs, id]);
      return r.rowCount > 0;
    } finally {
      ownKeyWrites++;
    }
  }

  /**
   * SQLite: `PRAGMA data_version` (differs once another connection, of this process or another, committed
   * anything) and this process's own key writes, read on the connection every statement uses. One cheap
   * statement: no table is read. PostgreSQL has no such counter short of a round trip, which costs what the
   * key lookup costs: null, every request reads its key.
   */
  async keysChangeToken(): Promise<string | null> {
    if (this.db.dialect !== 'sqlite') return null;
    const { rows } = await this.db.query<{ data_version: number }>('PRAGMA data_version');
    return `${rows[0]!.data_version}:${ownKeyWrites}`;
  }

  private async insert(onConflict: string, k: ApiKey): Promise<number> {
    const r = await this.db.query(
      `INSERT INTO api_keys (id, account_id, name, kind, secret_hash, scopes, expires_at_ms, create_time_ms, revoked_at_ms, secret_last4)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)${onConflict}`,
      [k.id, k.accountId, k.name, k.kind, k.secretHash, JSON.stringify(k.scopes), k.expiresAtMs, k.createTimeMs, k.revokedAtMs, k.secretLast4],
    );
    return r.rowCount;
  }
}

declare module '../../platform/store/types.js' {
  interface StoreParts {
    readonly accounts: AccountStore;
  }
}
