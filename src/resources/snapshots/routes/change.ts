import type { SnapshotService } from '../snapshot-service.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { SnapshotBody, SnapshotIdParams, SnapshotViewSchema, toInput, toView } from './schemas.js';

export function changeRoutes(app: Api, snapshots: SnapshotService): void {
  const schema = { params: SnapshotIdParams, response: replies(SnapshotViewSchema) };
  app.post('/v1/devboxes/disk_snapshots/:id', { schema: { ...schema, body: SnapshotBody } }, async (req) => {
    const { id } = req.params;
    return toView(await snapshots.update(req.principal.accountId, id, toInput(req.body)));
  });

  // 409 (not retried) while the snapshot is still being taken; its layers go once nothing uses them.
  app.post('/v1/devboxes/disk_snapshots/:id/delete', { schema }, async (req) => {
    const { id } = req.params;
    return toView(await snapshots.delete(req.principal.accountId, id));
  });
}
