import { fromPeer } from '../../../platform/http/peers.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams, DevboxViewSchema, view } from './schemas.js';
import type { DevboxService } from '../devbox-service.js';
import type { Devbox } from '../types.js';

const schema = { params: DevboxIdParams, response: replies(DevboxViewSchema) };

/**
 * What the suspend and resume routes ask of the snapshots module's SuspendService: named here so the devbox
 * resource does not import the snapshots resource (which imports this one).
 */
export interface Suspender {
  suspend(accountId: string, id: string): Promise<Devbox>;
  /** With `place`, the box may resume on another node (the request is then forwarded there); else here. */
  resume(accountId: string, id: string, opts?: { place?: boolean }): Promise<Devbox>;
}

export function suspendRoutes(app: Api, suspend: Suspender, devboxes: DevboxService): void {
  // Answers at once (suspending); the SDK's awaitSuspended polls wait_for_status. 400 unless running.
  app.post('/v1/devboxes/:id/suspend', { schema }, async (req) => {
    const { id } = req.params;
    return view(devboxes, await suspend.suspend(req.principal.accountId, id));
  });

  // Answers at once (resuming); 400 unless suspended. Not routed to the box's node by the front: this picks it.
  app.post('/v1/devboxes/:id/resume', { schema }, async (req) => {
    const { id } = req.params;
    return view(devboxes, await suspend.resume(req.principal.accountId, id, { place: !fromPeer(req.raw) }));
  });
}
