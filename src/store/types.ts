/**
 * Store interfaces. The SQLite implementations live in `sqlite/`; a PostgreSQL implementation satisfies the
 * same shapes later (every method is synchronous-looking here only in SQLite; the interfaces return values a
 * pooled async driver can also produce through the services, which never hold transactions across awaits).
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
  createAccount(account: Account): void;
  getAccount(id: string): Account | undefined;
  findAccountByName(name: string): Account | undefined;
  countKeys(): number;
  insertKey(key: ApiKey): void;
  /** Returns false when a key with that hash already exists. */
  insertKeyIfAbsent(key: ApiKey): boolean;
  findKeyByHash(hash: string): ApiKey | undefined;
  getKey(id: string): ApiKey | undefined;
  /** The account's keys that are not revoked, by id. */
  listKeys(accountId: string, page: PageQuery): Page<ApiKey>;
  /** Marks the key revoked unless it already is; returns whether this call revoked it. */
  revokeKey(id: string, atMs: number): boolean;
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
export type IdempotencyClaim =
  | { kind: 'owner' }
  | { kind: 'in_flight'; requestHash: string }
  | { kind: 'done'; requestHash: string; response: StoredResponse };

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
   * Drops the markers of requests a previous run of this server left in flight (SQLite: one server per
   * data dir, so every marker; a shared store scopes this to the node). Returns how many.
   */
  voidInFlight(): Promise<number>;
  /** Deletes answers stored before `beforeMs` and markers whose lease ended before it. */
  prune(beforeMs: number): Promise<void>;
}

import type { Devbox, DevboxStatus } from '../domain/devboxes/types.js';

export interface DevboxStore {
  insert(d: Devbox): void;
  /** Writes every mutable field of the devbox (status, reasons, transitions, names, metadata...). */
  update(d: Devbox): void;
  get(accountId: string, id: string): Devbox | undefined;
  /** Any account: for background jobs (watchdog, reconcile). */
  getById(id: string): Devbox | undefined;
  list(accountId: string, page: PageQuery, status?: DevboxStatus): Page<Devbox>;
  listByStatus(statuses: DevboxStatus[]): Devbox[];
}

import type { Snapshot, SnapshotFilters, SnapshotStatus } from '../domain/snapshots/types.js';

export interface SnapshotStore {
  insert(s: Snapshot): void;
  /** Writes every mutable field (status, error, size, names, metadata). */
  update(s: Snapshot): void;
  /** Deleted snapshots included; the service decides what a caller may see. */
  get(accountId: string, id: string): Snapshot | undefined;
  getById(id: string): Snapshot | undefined;
  /** Excludes deleted snapshots. */
  list(accountId: string, page: PageQuery, filters: SnapshotFilters): Page<Snapshot>;
  listByStatus(statuses: SnapshotStatus[]): Snapshot[];
  inProgressFor(devboxId: string): Snapshot | undefined;
}

import type { Execution, LogEntry, LogEntryInput, LogFilter } from '../domain/executions/types.js';

export interface ExecutionStore {
  insert(e: Execution): void;
  /** Writes the mutable fields (status, exit status, end time, byte counts). */
  update(e: Execution): void;
  get(devboxId: string, id: string): Execution | undefined;
  findByCommandId(devboxId: string, commandId: string): Execution | undefined;
  /** Executions left queued or running (by a previous server process, at start). */
  listUnfinished(): Execution[];
  /** Runs `fn` (writes to this store and the log store) as one transaction: one disk sync, all or nothing. */
  atomically<T>(fn: () => T): T;
}

export interface LogStore {
  /** Appends in one transaction; returns the entries with their sequence numbers. */
  append(entries: LogEntryInput[]): LogEntry[];
  /** Oldest first. */
  list(devboxId: string, filter: LogFilter): LogEntry[];
}
