import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { SuspendService } from '../../../domain/snapshots/suspend-service.js';
import { DevboxIdParams, toView } from './schemas.js';

export function suspendRoutes(app: FastifyInstance, suspend: SuspendService): void {
  // Answers at once (suspending); the SDK's awaitSuspended polls wait_for_status. 400 unless running.
  app.post('/v1/devboxes/:id/suspend', { schema: { params: DevboxIdParams } }, async (req) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    return toView(await suspend.suspend(req.principal.accountId, id));
  });

  // Answers at once (resuming); 400 unless suspended.
  app.post('/v1/devboxes/:id/resume', { schema: { params: DevboxIdParams } }, async (req) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    return toView(await suspend.resume(req.principal.accountId, id));
  });
}
