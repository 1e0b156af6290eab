import type { SnapshotService } from '../snapshot-service.js';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import { SnapshotBody, SnapshotViewSchema, toInput, toView } from './schemas.js';

/** How long snapshot_disk holds before answering with the snapshot still in progress (client timeout is 30 s). */
const SYNC_WAIT_MS = 25_000;

/** Snapshotting writes a snapshot and reads the devbox it copies (a restricted key needs both grants). */
const config = { alsoNeeds: [{ resource: 'RESOURCE_TYPE_DEVBOXES' as const, access: 'read' as const }] };

const schema = { params: DevboxIdParams, body: SnapshotBody, response: replies(SnapshotViewSchema) };

export function createRoutes(app: Api, snapshots: SnapshotService): void {
  // 200 at once with the snapshot in progress; 404 unknown devbox, 400 not running, 409 one already running.
  app.post('/v1/devboxes/:id/snapshot_disk_async', { schema, config }, async (req) => {
    const { id } = req.params;
    return toView(await snapshots.start(req.principal.accountId, id, toInput(req.body)));
  });

  app.post('/v1/devboxes/:id/snapshot_disk', { schema, config }, async (req, reply) => {
    const { id } = req.params;
    const s = await snapshots.take(req.principal.accountId, id, toInput(req.body), SYNC_WAIT_MS, clientGone(reply));
    return toView(s);
  });
}
