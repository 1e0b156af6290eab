/** Why the server suspends a box: the host stops or is drained, or it is short of memory. */
export type EvictionReason = 'host_shutdown' | 'drain' | 'resource_pressure';

/** A pending eviction: the box is suspended at (or soon after) its deadline unless it stops running first. */
export interface Eviction {
  devboxId: string;
  accountId: string;
  reason: EvictionReason;
  /** Unix ms after which the box is suspended (the SDK's `eviction_deadline_ms`). */
  deadlineMs: number;
  createTimeMs: number;
}

/** How one eviction ended: the box suspended, or left running for a reason (a snapshot in progress). */
export interface EvictionOutcome {
  devboxId: string;
  status: string;
  suspended: boolean;
  /** The box stopped running before its suspend (its owner shut or suspended it): nothing was left to evict. */
  gone?: boolean;
  message?: string;
}
