import type { SnapshotService } from '../snapshot-service.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { changeRoutes } from './change.js';
import { createRoutes } from './create.js';
import { snapshotOperations } from './operations.js';
import { readRoutes } from './read.js';

/**
 * Disk snapshots (under /v1/devboxes, like Runloop); RESOURCE_TYPE_SNAPSHOTS governs them. Taking one also
 * needs read on RESOURCE_TYPE_DEVBOXES (see create.ts); suspend and resume are devbox routes.
 */
export const snapshotRoutes = resourceModule('RESOURCE_TYPE_SNAPSHOTS', snapshotOperations, (scope, opts: { snapshots: SnapshotService }) => {
  createRoutes(scope, opts.snapshots);
  readRoutes(scope, opts.snapshots);
  changeRoutes(scope, opts.snapshots);
});
