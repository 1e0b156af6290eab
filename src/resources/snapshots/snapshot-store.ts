import type { Page, PageQuery } from '../../platform/store/types.js';
import type { Snapshot, SnapshotFilters, SnapshotStatus } from './types.js';

export interface SnapshotStore {
  /** At most one snapshot per devbox is in progress (a unique index): a second one fails with a conflict. */
  insert(s: Snapshot): Promise<void>;
  /** Deleted snapshots included; the service decides what a caller may see. */
  get(accountId: string, id: string): Promise<Snapshot | undefined>;
  getById(id: string): Promise<Snapshot | undefined>;
  /** Excludes deleted snapshots. */
  list(accountId: string, page: PageQuery, filters: SnapshotFilters): Promise<Page<Snapshot>>;
  /** Every node's snapshots, or only those taken on `node`. */
  listByStatus(statuses: readonly SnapshotStatus[], node?: string): Promise<Snapshot[]>;
  inProgressFor(devboxId: string): Promise<Snapshot | undefined>;
  /** Conditional like a devbox transition: applies only from one of `from`; the updated row or undefined. */
  setStatus(
    id: string,
    from: readonly SnapshotStatus[],
    to: SnapshotStatus,
    fields?: { sizeBytes?: number; errorMessage?: string },
  ): Promise<Snapshot | undefined>;
  /** Writes only the given columns. */
  patch(
    accountId: string,
    id: string,
    patch: { name?: string | null; metadata?: Record<string, string>; commitMessage?: string | null },
  ): Promise<Snapshot | undefined>;
}

declare module '../../platform/store/types.js' {
  interface StoreParts {
    readonly snapshots: SnapshotStore;
  }
}
