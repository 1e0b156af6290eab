import type { FastifyInstance } from 'fastify';
import type { SnapshotService } from '../../../domain/snapshots/snapshot-service.js';
import { changeRoutes } from './change.js';
import { createRoutes } from './create.js';
import { readRoutes } from './read.js';

/**
 * Disk snapshots (under /v1/devboxes, like Runloop); RESOURCE_TYPE_SNAPSHOTS governs them. Taking one also
 * needs read on RESOURCE_TYPE_DEVBOXES (see create.ts); suspend and resume are devbox routes.
 */
export async function snapshotRoutes(scope: FastifyInstance, opts: { snapshots: SnapshotService }): Promise<void> {
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), resource: 'RESOURCE_TYPE_SNAPSHOTS' } as typeof route.config;
  });
  createRoutes(scope, opts.snapshots);
  readRoutes(scope, opts.snapshots);
  changeRoutes(scope, opts.snapshots);
}
