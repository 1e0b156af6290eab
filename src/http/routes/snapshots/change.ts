import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { SnapshotService } from '../../../domain/snapshots/snapshot-service.js';
import { SnapshotBody, SnapshotIdParams, toInput, toView, type SnapshotBodyWire } from './schemas.js';

export function changeRoutes(app: FastifyInstance, snapshots: SnapshotService): void {
  app.post('/v1/devboxes/disk_snapshots/:id', { schema: { params: SnapshotIdParams, body: SnapshotBody } }, async (req) => {
    const { id } = req.params as Static<typeof SnapshotIdParams>;
    return toView(await snapshots.update(req.principal.accountId, id, toInput(req.body as SnapshotBodyWire)));
  });

  // 409 (not retried) while the snapshot is still being taken; its layers go once nothing uses them.
  app.post('/v1/devboxes/disk_snapshots/:id/delete', { schema: { params: SnapshotIdParams } }, async (req) => {
    const { id } = req.params as Static<typeof SnapshotIdParams>;
    return toView(await snapshots.delete(req.principal.accountId, id));
  });
}
