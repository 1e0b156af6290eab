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

export interface IdempotencyStore {
  get(accountId: string, requestId: string, route: string, sinceMs: number): StoredResponse | undefined;
  put(accountId: string, requestId: string, route: string, response: StoredResponse): void;
  prune(beforeMs: number): void;
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
