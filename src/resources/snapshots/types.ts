export const SNAPSHOT_STATUSES = ['in_progress', 'complete', 'error', 'deleted'] as const;
export type SnapshotStatus = (typeof SNAPSHOT_STATUSES)[number];

/** A disk snapshot: an immutable layer of its own on top of the layers its devbox started from. */
export interface Snapshot {
  id: string;
  accountId: string;
  sourceDevboxId: string;
  sourceBlueprintId: string | null;
  name: string | null;
  metadata: Record<string, string>;
  commitMessage: string | null;
  status: SnapshotStatus;
  errorMessage: string | null;
  /** Bytes of every layer above the base image; null until complete. */
  sizeBytes: number | null;
  /** Disk layers, newest first: the snapshot's own layer, then the source devbox's layers. */
  layers: string[];
  createTimeMs: number;
  /** The server that took it (its layer lives there); only that server reconciles it at start. */
  node: string;
}

export interface SnapshotFilters {
  devboxId?: string;
  sourceBlueprintId?: string;
  /** metadata[k] = v */
  metadataEquals?: Record<string, string>;
  /** metadata[k][in] = v1,v2: any of */
  metadataIn?: Record<string, string[]>;
}

export interface SnapshotInput {
  name?: string | null;
  metadata?: Record<string, string> | null;
  commitMessage?: string | null;
}

/** Metadata that marks the snapshot a suspend takes. */
export const SUSPEND_METADATA_KEY = 'devboxd_suspend';
export const COMMIT_MESSAGE_MAX = 1000;
