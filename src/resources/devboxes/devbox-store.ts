import type { ApiKey, Page, PageQuery } from '../../platform/store/types.js';
import type { Devbox, DevboxStatus, FailureReason, ShutdownReason, StateTransition } from './types.js';

/**
 * A devbox status change, applied only while the row is in one of `from`: the caller learns whether it won
 * (a racing change, e.g. a shutdown during a suspend, makes the other one a no-op instead of a revert).
 */
export interface DevboxTransition {
  from: readonly DevboxStatus[];
  to: DevboxStatus;
  /** Appended to the state transitions (usually one; boot records `initializing` and `running` at once). */
  transitions: StateTransition[];
  endTimeMs?: number;
  failureReason?: FailureReason;
  shutdownReason?: ShutdownReason;
  /** New disk layers (suspend points the box at its suspend snapshot in the same step). */
  layers?: string[];
}

/** What a devbox list keeps: a status, and `search`, the box with that exact id or whose name contains it (any case). */
export interface DevboxListFilter {
  status?: DevboxStatus;
  search?: string;
}

export interface DevboxStore {
  insert(d: Devbox): Promise<void>;
  /**
   * Makes `d` of a pooled box (a running box of no account, POOL_ACCOUNT, with `d.id`): every column
   * rewritten, in one statement that holds only while the box is still pooled and running. False when not.
   */
  claimPooled(d: Devbox): Promise<boolean>;
  get(accountId: string, id: string): Promise<Devbox | undefined>;
  /** The API key with `keyHash` and, if its account has it, the box: one statement (a hinted GET, KeyCheck). */
  getWithKey(keyHash: string, id: string): Promise<{ key?: ApiKey; devbox?: Devbox }>;
  /** Any account: for background jobs (watchdog, reconcile). */
  getById(id: string): Promise<Devbox | undefined>;
  /** Where a box is and whether it ended: one read by primary key, for routing a request to the box's node. */
  locate(id: string): Promise<{ node: string; status: DevboxStatus } | undefined>;
  /** Moves a suspended box from node `from` to `to` (a resume elsewhere); false when it is not so any more. */
  move(id: string, from: string, to: string): Promise<boolean>;
  list(accountId: string, page: PageQuery, filter?: DevboxListFilter): Promise<Page<Devbox>>;
  /** How many boxes of every account are in each status (pooled boxes, of no account, not counted): /metrics. */
  countByStatus(): Promise<Partial<Record<DevboxStatus, number>>>;
  /** Every node's boxes, or only those `node` runs. */
  listByStatus(statuses: readonly DevboxStatus[], node?: string): Promise<Devbox[]>;
  /** The conditional status change; the updated devbox, or undefined when its status was not in `from`. */
  transition(id: string, t: DevboxTransition): Promise<Devbox | undefined>;
  /** Writes only the given columns (a rename cannot revert a concurrent transition). */
  patch(accountId: string, id: string, patch: { name?: string | null; metadata?: Record<string, string> }): Promise<Devbox | undefined>;
  /** Moves the keep-alive mark unless the box has ended; returns whether it did. */
  keepAlive(accountId: string, id: string, atMs: number): Promise<boolean>;
  /**
   * Records that the box may now have something for the view part `part` (Devbox.viewParts); call it in the
   * transaction that writes that something. Never removed: a part recorded in vain costs one read per view.
   */
  markView(id: string, part: string): Promise<void>;
}

declare module '../../platform/store/types.js' {
  interface StoreParts {
    readonly devboxes: DevboxStore;
  }
}
