/**
 * The store port. One implementation (`sql/`) serves both dialects through an executor (`sqlite/`,
 * `postgres/`); every method is async, and every state change is a conditional or column-scoped write, so
 * concurrent requests (or servers sharing PostgreSQL) never revert each other's changes.
 */

export interface PageQuery {
  limit: number;
  startingAfter?: string;
  includeTotalCount: boolean;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  totalCount?: number;
}

export interface Account {
  id: string;
  name: string;
  createTimeMs: number;
}

export type AccessLevel = 'none' | 'read' | 'write';

export interface Scope {
  resourceType: string;
  accessLevel: AccessLevel;
}

export interface ApiKey {
  id: string;
  accountId: string;
  name: string | null;
  kind: 'standard' | 'restricted';
  secretHash: string;
  scopes: Scope[];
  expiresAtMs: number | null;
  createTimeMs: number;
  /** When the key was revoked; a revoked key never authenticates again. */
  revokedAtMs: number | null;
  /** The last four characters of the secret (null for keys made before they were recorded). */
  secretLast4: string | null;
}

export interface AccountStore {
  createAccount(account: Account): Promise<void>;
  getAccount(id: string): Promise<Account | undefined>;
  findAccountByName(name: string): Promise<Account | undefined>;
  countKeys(): Promise<number>;
  /** A second key with the same secret hash fails with a conflict error. */
  insertKey(key: ApiKey): Promise<void>;
  /** Returns false when a key with that hash already exists. */
  insertKeyIfAbsent(key: ApiKey): Promise<boolean>;
  findKeyByHash(hash: string): Promise<ApiKey | undefined>;
  getKey(id: string): Promise<ApiKey | undefined>;
  /** The account's keys that are not revoked, by id. */
  listKeys(accountId: string, page: PageQuery): Promise<Page<ApiKey>>;
  /** Marks the key revoked unless it already is; returns whether this call revoked it. */
  revokeKey(id: string, atMs: number): Promise<boolean>;
  /**
   * A token that differs once anything that may change a key was committed since it was read, by this process
   * or another one; null where the database cannot tell more cheaply than by reading the key itself.
   */
  keysChangeToken(): Promise<string | null>;
}

export interface StoredResponse {
  status: number;
  body: string;
}

/** One x-request-id as seen by one account on one route (method and URL). */
export interface IdempotencyKey {
  accountId: string;
  requestId: string;
  route: string;
}

/**
 * What `claim` found: `owner` means the caller now holds the in-flight marker and runs the request;
 * `in_flight` means another request holds it; `done` carries the stored answer. `requestHash` is the hash
 * the id was first used with.
 */
export type IdempotencyClaim = { kind: 'owner' } | { kind: 'in_flight'; requestHash: string } | { kind: 'done'; requestHash: string; response: StoredResponse };

/**
 * x-request-id claims. Every write is one conditional statement (in PostgreSQL: `INSERT … ON CONFLICT DO
 * NOTHING` and `UPDATE … WHERE owner = $1`), so servers sharing the database agree on one owner.
 */
export interface IdempotencyStore {
  /**
   * Writes an in-flight marker owned by `owner` (lease until `leaseUntilMs`) unless a live row exists. A
   * row whose lease ended before `nowMs`, or an answer stored before `sinceMs`, is taken over.
   */
  claim(key: IdempotencyKey, requestHash: string, owner: string, nowMs: number, leaseUntilMs: number, sinceMs: number): Promise<IdempotencyClaim>;
  /** Extends the lease; false when `owner` no longer holds the marker. */
  renew(key: IdempotencyKey, owner: string, leaseUntilMs: number): Promise<boolean>;
  /** Stores the answer in place of the marker, if `owner` still holds it. */
  complete(key: IdempotencyKey, owner: string, response: StoredResponse): Promise<void>;
  /** Drops the marker, if `owner` still holds it, so the next request with that id runs afresh. */
  release(key: IdempotencyKey, owner: string): Promise<void>;
  /**
   * Drops the markers of requests a previous run of this server left in flight: those whose owner id starts
   * with `ownerPrefix` (the node name), so servers sharing the database keep each other's. Returns how many.
   */
  voidInFlight(ownerPrefix: string): Promise<number>;
  /** Deletes answers stored before `beforeMs` and markers whose lease ended before it. */
  prune(beforeMs: number): Promise<void>;
}

/** Every store over one database, plus transactions that hand out stores bound to them. */
import type { Job } from '../jobs/types.js';
import type { SqlExecutor } from './sql/executor.js';

/** Durable jobs (see platform/jobs): every change is conditional on the state it leaves. */
export interface JobStore {
  /** At most one open (pending or running) job per kind and subject: a second one is a conflict. */
  insert(j: Job): Promise<void>;
  get(id: string): Promise<Job | undefined>;
  /** pending → running for `node`, counting an attempt; the job, or undefined if it was not pending. */
  claim(id: string, node: string, nowMs: number): Promise<Job | undefined>;
  /** running → succeeded or failed; false if it was not running. */
  settle(id: string, state: 'succeeded' | 'failed', lastError: string | null, nowMs: number): Promise<boolean>;
  /** running → pending, due at `runAfterMs`. */
  retry(id: string, runAfterMs: number, lastError: string, nowMs: number): Promise<boolean>;
  /** At start: this node's running jobs (cut by the restart) become pending again; how many. */
  requeueRunning(node: string, nowMs: number): Promise<number>;
  /** This node's pending and running jobs, oldest first. */
  listOpen(node: string): Promise<Job[]>;
  /** An open job of node `from` becomes a pending one of node `to` (its node was lost); false if it was not open there. */
  move(id: string, from: string, to: string, nowMs: number): Promise<boolean>;
  /** An open job of node `from` fails for good with `lastError` (its node was lost); false if it was not open there. */
  abandon(id: string, from: string, lastError: string, nowMs: number): Promise<boolean>;
  delete(id: string): Promise<void>;
}

/**
 * The stores each resource adds to `Store`, declared by the resource that owns them: e.g. resources/devboxes
 * augments this with `devboxes: DevboxStore` (a `declare module` block beside its store interface) and the
 * composition root hands `openSqlStore` the factory that builds them. The platform names no resource's store.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the resources (see above)
export interface StoreParts {}

export interface Store extends StoreParts {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * The executor this store runs on (in a transaction, the transaction's): resource modules build their own
   * stores over it (`new SqlSecretStore(store.db)`), so their tables share the database and its transactions.
   */
  readonly db: SqlExecutor;
  readonly idempotency: IdempotencyStore;
  readonly jobs: JobStore;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. Inside, use only
   * `tx` (a statement through the outer store waits until the transaction ends, and would wait forever).
   */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;
  /** Answers once the database does (health checks). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Builds the resources' stores over one executor (the database's, or a transaction's). */
export type StorePartsFactory = (db: SqlExecutor) => StoreParts;
