import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { SnapshotService } from '../../../domain/snapshots/snapshot-service.js';
import { clientGone } from '../../request-signal.js';
import { DevboxIdParams } from '../devboxes/schemas.js';
import { SnapshotBody, toInput, toView, type SnapshotBodyWire } from './schemas.js';

/** How long snapshot_disk holds before answering with the snapshot still in progress (client timeout is 30 s). */
const SYNC_WAIT_MS = 25_000;

/** Snapshotting writes a snapshot and reads the devbox it copies (a restricted key needs both grants). */
const config = { alsoNeeds: [{ resource: 'RESOURCE_TYPE_DEVBOXES' as const, access: 'read' as const }] };

export function createRoutes(app: FastifyInstance, snapshots: SnapshotService): void {
  // 200 at once with the snapshot in progress; 404 unknown devbox, 400 not running, 409 one already running.
  app.post('/v1/devboxes/:id/snapshot_disk_async', { schema: { params: DevboxIdParams, body: SnapshotBody }, config }, async (req) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    return toView(await snapshots.start(req.principal.accountId, id, toInput(req.body as SnapshotBodyWire)));
  });

  app.post('/v1/devboxes/:id/snapshot_disk', { schema: { params: DevboxIdParams, body: SnapshotBody }, config }, async (req, reply) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    const s = await snapshots.take(req.principal.accountId, id, toInput(req.body as SnapshotBodyWire), SYNC_WAIT_MS, clientGone(reply));
    return toView(s);
  });
}
