import { ERRORS } from '../../platform/errors.js';
import type { CreateResolver, ShutdownGuard } from '../devboxes/index.js';
import type { SnapshotService } from './snapshot-service.js';

/** The part of the snapshot service the devbox core reaches through its extension points. */
type Snapshots = Pick<SnapshotService, 'layersOf' | 'inProgressFor'>;

/**
 * A create naming `snapshot_id` boots from that snapshot's layers (404 unknown, 400 not complete), and keeps
 * its source box's `available_ports` unless the create names its own: what served on those ports still does,
 * and a snapshot must not widen what a box exposes. The snapshot service is built after the devbox service
 * (it needs it), so it is reached through a thunk.
 */
export function snapshotLayersResolver(snapshots: () => Snapshots): CreateResolver {
  return async (accountId, input) => {
    if (!input.snapshotId) return undefined;
    const { layers, sourceBlueprintId, availablePorts } = await snapshots().layersOf(accountId, input.snapshotId);
    return { layers, blueprintId: sourceBlueprintId, ...(availablePorts ? { defaults: { launchParameters: { available_ports: availablePorts } } } : {}) };
  };
}

/** A box with a snapshot in progress shuts down only with force (the capture would be cut). */
export function snapshotShutdownGuard(snapshots: () => Snapshots): ShutdownGuard {
  return async (d) =>
    (await snapshots().inProgressFor(d.id))
      ? ERRORS.snapshotInProgress(`devbox ${d.id} has a snapshot in progress; wait for it or shut down with force=true`)
      : null;
}
