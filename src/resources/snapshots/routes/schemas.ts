import { Type } from 'typebox';
import { SNAPSHOT_STATUSES, type Snapshot } from '../types.js';
import { Body, Int, LIMITS, Metadata, Opt, OrNull, StringEnum, StringMap, Text } from '../../../platform/http/schemas/common.js';

/** snapshot_disk, snapshot_disk_async and update share one body; commit_message length is checked by the domain. */
export const SnapshotBody = Body({
  name: Opt(Text(LIMITS.name)),
  metadata: Opt(Metadata),
  commit_message: Opt(Text(100_000)),
});
export type SnapshotBodyWire = { name?: string | null; metadata?: Record<string, string> | null; commit_message?: string | null };

export const toInput = (b: SnapshotBodyWire | null | undefined) => ({
  name: b?.name,
  metadata: b?.metadata,
  commitMessage: b?.commit_message,
});

export const SnapshotIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** DevboxSnapshotView as `toView` writes it. */
export const SnapshotViewSchema = Type.Object(
  {
    id: Type.String(),
    name: OrNull(Type.String()),
    create_time_ms: Int,
    metadata: StringMap,
    source_devbox_id: Type.String(),
    source_blueprint_id: OrNull(Type.String()),
    commit_message: OrNull(Type.String()),
    size_bytes: OrNull(Int),
  },
  { title: 'DevboxSnapshotView', description: 'a disk snapshot' },
);

/** DevboxSnapshotAsyncStatusView. */
export const StatusViewSchema = Type.Object(
  {
    status: StringEnum([...SNAPSHOT_STATUSES]),
    snapshot: SnapshotViewSchema,
    error_message: Type.Optional(Type.String()),
  },
  { title: 'DevboxSnapshotAsyncStatusView', description: "a snapshot's progress" },
);

/** DevboxSnapshotView. */
export const toView = (s: Snapshot) => ({
  id: s.id,
  name: s.name,
  create_time_ms: s.createTimeMs,
  metadata: s.metadata,
  source_devbox_id: s.sourceDevboxId,
  source_blueprint_id: s.sourceBlueprintId,
  commit_message: s.commitMessage,
  size_bytes: s.sizeBytes,
});

/** DevboxSnapshotAsyncStatusView. */
export const toStatusView = (s: Snapshot) => ({
  status: s.status,
  snapshot: toView(s),
  ...(s.errorMessage ? { error_message: s.errorMessage } : {}),
});
