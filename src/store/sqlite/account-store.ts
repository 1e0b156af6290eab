import type { Db } from './db.js';
import { paginate } from './paginate.js';
import type { Account, AccountStore, ApiKey, Page, PageQuery } from '../types.js';

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

const toAccount = (r: AccountRow): Account => ({ id: r.id, name: r.name, createTimeMs: r.create_time_ms });

export class SqliteAccountStore implements AccountStore {
  // Prepared once: every authenticated request runs these two lookups.
  private readonly byHash;
  private readonly byId;

  constructor(private readonly db: Db) {
    this.byHash = db.prepare('SELECT * FROM api_keys WHERE secret_hash = ?');
    this.byId = db.prepare('SELECT * FROM accounts WHERE id = ?');
  }

  createAccount(a: Account): void {
    this.db
      .prepare('INSERT INTO accounts (id, name, create_time_ms) VALUES (?, ?, ?)')
      .run(a.id, a.name, a.createTimeMs);
  }

  getAccount(id: string): Account | undefined {
    const row = this.byId.get(id) as AccountRow | undefined;
    return row && toAccount(row);
  }

  findAccountByName(name: string): Account | undefined {
    const row = this.db.prepare('SELECT * FROM accounts WHERE name = ? ORDER BY id LIMIT 1').get(name) as
      | AccountRow
      | undefined;
    return row && toAccount(row);
  }

  countKeys(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM api_keys').get() as { n: number }).n;
  }

  insertKey(k: ApiKey): void {
    this.insert('INSERT', k);
  }

  insertKeyIfAbsent(k: ApiKey): boolean {
    return this.insert('INSERT OR IGNORE', k) > 0;
  }

  findKeyByHash(hash: string): ApiKey | undefined {
    const row = this.byHash.get(hash) as KeyRow | undefined;
    return row && toKey(row);
  }

  getKey(id: string): ApiKey | undefined {
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as KeyRow | undefined;
    return row && toKey(row);
  }

  listKeys(accountId: string, page: PageQuery): Page<ApiKey> {
    return paginate(this.db, 'api_keys', ['account_id = ?', 'revoked_at_ms IS NULL'], [accountId], page, toKey);
  }

  revokeKey(id: string, atMs: number): boolean {
    return this.db.prepare('UPDATE api_keys SET revoked_at_ms = ? WHERE id = ? AND revoked_at_ms IS NULL').run(atMs, id).changes > 0;
  }

  private insert(verb: string, k: ApiKey): number {
    return this.db
      .prepare(
        `${verb} INTO api_keys (id, account_id, name, kind, secret_hash, scopes, expires_at_ms, create_time_ms, revoked_at_ms, secret_last4)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        k.id,
        k.accountId,
        k.name,
        k.kind,
        k.secretHash,
        JSON.stringify(k.scopes),
        k.expiresAtMs,
        k.createTimeMs,
        k.revokedAtMs,
        k.secretLast4,
      ).changes;
  }
}
