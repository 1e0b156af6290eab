import { createHash } from 'node:crypto';
import { ERRORS } from '../../platform/errors.js';
import { newId, newSecret } from '../../lib/ids.js';
import { allows, type Authenticator, grantOf, RANK, type Principal, type ResourceType } from '../../platform/auth/principal.js';
import type { Account, AccountStore, ApiKey, Page, PageQuery, Scope, Store } from '../../platform/store/types.js';

export const DEFAULT_ACCOUNT_NAME = 'default';
/** Owner of the server's own seeds (see `builtinAccountId`). */
export const BUILTIN_ACCOUNT_NAME = 'devboxd-builtin';

/** Keys are stored as SHA-256 digests: the secrets are 192-bit random, so a slow hash buys nothing. */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** Keys kept between requests; past this the cache starts afresh (a key costs ~1 KiB). */
const MAX_CACHED_KEYS = 10_000;

export class AccountService implements Authenticator {
  private readonly store: AccountStore;
  /** Keys by secret hash as read while the store's change token was `cachedToken` (see `findKey`). */
  private readonly cached = new Map<string, ApiKey>();
  private cachedToken: string | null = null;
  /** Principals by key hash as last authenticated here, where every key is read (see `overlapped`). */
  private readonly hints = new Map<string, Principal>();
  private readsEveryKey = false;
  /** The default account's id, once read: accounts are never renamed or removed. */
  private operatorAccount: string | undefined;

  constructor(private readonly db: Pick<Store, 'accounts' | 'transaction'>) {
    this.store = db.accounts;
  }

  /** Resolves a bearer secret to its principal, refusing unknown and expired keys. */
  async authenticate(secret: string, nowMs = Date.now()): Promise<Principal> {
    return this.checkHash(hashSecret(secret), nowMs);
  }

  /**
   * Where every request reads its key (PostgreSQL: no change token), the principal the secret had when it
   * last passed here, and its hash. A plain read may run under the hint while the key is read again: by its
   * own statement (`checkHash`, sent alongside the route's reads: one round trip instead of two) or inside
   * the route's statement (`admit` on the key row it read). Nothing the route made may leave before that
   * check found the same principal (the auth hook holds the response); a revocation committed before the
   * request still refuses it. Undefined without a hint: authenticate and wait.
   */
  hinted(secret: string): { hint: Principal; hash: string } | undefined {
    if (!this.readsEveryKey) return undefined;
    const hash = hashSecret(secret);
    const hint = this.hints.get(hash);
    return hint && { hint, hash };
  }

  /** Reads the key of a secret hash now and admits it (see `admit`). */
  async checkHash(hash: string, nowMs = Date.now()): Promise<Principal> {
    return this.admit(hash, await this.findKey(hash), nowMs);
  }

  /**
   * The principal of `key`, the row the database holds for `hash` as just read (undefined: none), or the
   * refusal: unknown, revoked and expired keys are 401.
   */
  admit(hash: string, key: ApiKey | undefined, nowMs = Date.now()): Principal {
    const refusal = !key
      ? 'invalid API key'
      : key.revokedAtMs !== null
        ? 'API key has been revoked'
        : key.expiresAtMs !== null && key.expiresAtMs <= nowMs
          ? 'API key has expired'
          : null;
    if (!key || refusal) {
      this.hints.delete(hash);
      throw ERRORS.unauthenticated(refusal ?? 'invalid API key');
    }
    const p: Principal = { accountId: key.accountId, keyId: key.id, kind: key.kind, scopes: key.scopes, expiresAtMs: key.expiresAtMs };
    if (this.readsEveryKey) {
      if (this.hints.size >= MAX_CACHED_KEYS) this.hints.clear();
      this.hints.set(hash, p);
    }
    return p;
  }

  /**
   * The key of a secret hash, as the database holds it now. Keys found are kept while the store's change
   * token stays the same, i.e. while nothing that could revoke one was committed since, by this process or
   * another (SQLite); a key is read after the token it is kept under, so a revocation committed in between
   * changes the token and the entry is dropped on the next request. Without a token (PostgreSQL) every call
   * reads the key.
   */
  private async findKey(hash: string): Promise<ApiKey | undefined> {
    const token = await this.store.keysChangeToken();
    this.readsEveryKey = token === null;
    if (token === null) return this.store.findKeyByHash(hash);
    if (token !== this.cachedToken) {
      this.cached.clear();
      this.cachedToken = token;
    }
    const hit = this.cached.get(hash);
    if (hit) return hit;
    const key = await this.store.findKeyByHash(hash);
    if (key && this.cachedToken === token) {
      if (this.cached.size >= MAX_CACHED_KEYS) this.cached.clear();
      this.cached.set(hash, key);
    }
    return key;
  }

  /** Standard keys may do anything in their account; restricted keys only what their scopes grant. */
  authorize(p: Principal, resource: ResourceType, level: 'read' | 'write'): void {
    if (!allows(p, resource, level)) {
      throw ERRORS.forbidden(`this restricted key lacks ${level} access to ${resource}`);
    }
  }

  /** The account's keys that are not revoked (never their secrets: only digests are stored). */
  listKeys(accountId: string, page: PageQuery): Promise<Page<ApiKey>> {
    return this.store.listKeys(accountId, page);
  }

  /**
   * Revokes a key at once: the next request with it gets 401. `by` is the calling key (null for the operator
   * CLI): it sees only its own account's keys and, if restricted, revokes only keys no wider than itself, as
   * it may only create those. A key may revoke itself. Revoking a revoked key answers the same view again.
   */
  async revokeKey(by: Principal | null, id: string): Promise<ApiKey> {
    const key = await this.store.getKey(id);
    if (!key || (by && key.accountId !== by.accountId)) throw ERRORS.notFound('API key', id);
    if (by) this.requireNoWider(by, key.kind, key.scopes, 'revoke');
    await this.store.revokeKey(id, Date.now());
    return (await this.store.getKey(id))!;
  }

  async getAccount(id: string): Promise<Account> {
    const a = await this.store.getAccount(id);
    if (!a) throw ERRORS.notFound('account', id);
    return a;
  }

  /** The account and its first key in one transaction: never an account nobody can use. */
  async createAccount(name: string): Promise<{ account: Account; secret: string }> {
    const account: Account = { id: newId('acc'), name, createTimeMs: Date.now() };
    const { key, secret } = this.mintKey(account.id, { name: 'initial key', kind: 'standard' });
    await this.db.transaction(async (tx) => {
      await tx.accounts.createAccount(account);
      await tx.accounts.insertKey(key);
    });
    return { account, secret };
  }

  /**
   * Mints a key. `by` is the calling key (absent for the operator CLI and bootstrap): a key it mints is never
   * wider than itself, so a restricted key cannot mint a standard key nor grant more than its own scopes, and
   * no key mints one that outlives it.
   */
  async createKey(
    accountId: string,
    opts: { name?: string | null; kind: ApiKey['kind']; expiresAtMs?: number | null; scopes?: Scope[] },
    by?: Principal,
  ): Promise<{ key: ApiKey; secret: string }> {
    if (opts.expiresAtMs != null && opts.expiresAtMs <= Date.now()) {
      throw ERRORS.invalid('expires_at_ms must be in the future');
    }
    const seen = new Set<string>();
    for (const s of opts.scopes ?? []) {
      if (seen.has(s.resourceType)) throw ERRORS.invalid(`scopes: ${s.resourceType} appears more than once`);
      seen.add(s.resourceType);
    }
    if (by) this.requireNoWider(by, opts.kind, opts.scopes ?? [], 'create');
    // Nor does it outlive its creator: a key that expires mints only keys that expire no later.
    if (by?.expiresAtMs != null && (opts.expiresAtMs == null || opts.expiresAtMs > by.expiresAtMs)) {
      throw ERRORS.forbidden(`expires_at_ms must be at most ${by.expiresAtMs}: this key expires then and cannot create a key that outlives it`);
    }
    // The warm pools' account (devboxes' POOL_ACCOUNT, '') holds boxes no tenant owns yet: a key for it would
    // reach them all.
    if (accountId === '') throw ERRORS.invalid('the warm pools account takes no keys');
    const minted = this.mintKey(accountId, opts);
    await this.store.insertKey(minted.key);
    return minted;
  }

  private mintKey(
    accountId: string,
    opts: { name?: string | null; kind: ApiKey['kind']; expiresAtMs?: number | null; scopes?: Scope[] },
  ): { key: ApiKey; secret: string } {
    const secret = newSecret(opts.kind === 'standard' ? 'ak' : 'rk');
    const key: ApiKey = {
      id: newId('key'),
      accountId,
      name: opts.name ?? null,
      kind: opts.kind,
      secretHash: hashSecret(secret),
      scopes: opts.scopes ?? [],
      expiresAtMs: opts.expiresAtMs ?? null,
      createTimeMs: Date.now(),
      revokedAtMs: null,
      secretLast4: secret.slice(-4),
    };
    return { key, secret };
  }

  /**
   * First-key bootstrap: DEVBOXD_ADMIN_KEY becomes a standard key of the default account (idempotent);
   * without it, a store with no keys at all gets one fresh key, returned so the caller can show it once.
   */
  async bootstrap(adminKey: string | undefined): Promise<{ createdSecret?: string }> {
    const account = (await this.store.findAccountByName(DEFAULT_ACCOUNT_NAME)) ?? (await this.defaultAccount());
    if (adminKey) {
      await this.store.insertKeyIfAbsent({
        id: newId('key'),
        accountId: account.id,
        name: 'admin (DEVBOXD_ADMIN_KEY)',
        kind: 'standard',
        secretHash: hashSecret(adminKey),
        scopes: [],
        expiresAtMs: null,
        createTimeMs: Date.now(),
        revokedAtMs: null,
        secretLast4: adminKey.slice(-4),
      });
      return {};
    }
    if ((await this.store.countKeys()) > 0) return {};
    return { createdSecret: (await this.createKey(account.id, { name: 'admin', kind: 'standard' })).secret };
  }

  /**
   * The account that owns what the server itself seeds (the built-in public benchmark), created if absent. It
   * has no key: nobody acts as it, and its records count against no user's limits nor show in their lists.
   */
  async builtinAccountId(): Promise<string> {
    const have = await this.store.findAccountByName(BUILTIN_ACCOUNT_NAME);
    if (have) return have.id;
    const account: Account = { id: newId('acc'), name: BUILTIN_ACCOUNT_NAME, createTimeMs: Date.now() };
    await this.store.createAccount(account);
    return account.id;
  }

  /**
   * Refuses a key of any account but the operator's: the default account, which the first key (the admin
   * key) belongs to. Server-wide data (metrics aggregate every account's traffic) is the operator's; any key
   * of that account passes, a restricted one with no grants included (a scraper's key that can do nothing else).
   */
  async authorizeOperator(p: Principal): Promise<void> {
    this.operatorAccount ??= (await this.store.findAccountByName(DEFAULT_ACCOUNT_NAME))?.id;
    if (p.accountId !== this.operatorAccount) throw ERRORS.forbidden("this endpoint answers keys of the server operator's (default) account only");
  }

  /** Refuses when a key of `kind` with `scopes` would grant anything the restricted caller lacks. */
  private requireNoWider(by: Principal, kind: ApiKey['kind'], scopes: Scope[], verb: 'create' | 'revoke'): void {
    if (by.kind === 'standard') return;
    if (kind === 'standard') {
      throw ERRORS.forbidden(
        `a restricted key cannot ${verb} a standard key (a standard key has every access; a key can ${verb} only keys no wider than itself)`,
      );
    }
    for (const s of scopes) {
      const own = grantOf(by.scopes, s.resourceType);
      if (RANK[s.accessLevel] > RANK[own]) {
        throw ERRORS.forbidden(`this restricted key cannot ${verb} a key with ${s.accessLevel} access to ${s.resourceType}: it has ${own} access there itself`);
      }
    }
  }

  private async defaultAccount(): Promise<Account> {
    const account: Account = { id: newId('acc'), name: DEFAULT_ACCOUNT_NAME, createTimeMs: Date.now() };
    await this.store.createAccount(account);
    return account;
  }
}
