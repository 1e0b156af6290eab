import { Type } from 'typebox';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import type { PtyTunnels } from '../pty-tunnels.js';

export interface PtyRouteOptions {
  ptyTunnels: PtyTunnels;
}

const PtyTunnelViewSchema = Type.Object({
  auth_token: Type.String({ description: 'Bearer token every request on the tunnel carries as X-Runloop-Tunnel-Authorization: Bearer <auth_token>' }),
  tunnel_key: Type.String({ description: 'The tunnel host name is {port}-{tunnel_key}.tunnel.<domain> (any port)' }),
});

/** create_pty_tunnel; the PTY endpoints themselves are served on the tunnel's host name by `PtyFront`. */
export const ptyRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', (app, opts: PtyRouteOptions) => {
  // A fresh tunnel on every call, never on the devbox view; 400 unless the box runs. A retried x-request-id
  // answers the same tunnel, its token kept sealed for the replay window (never in clear).
  const config = { resource: 'RESOURCE_TYPE_DEVBOXES' as const, idempotent: 'sealed' as const };
  app.post('/v1/devboxes/:id/create_pty_tunnel', { schema: { params: DevboxIdParams, response: replies(PtyTunnelViewSchema) }, config }, async (req) => {
    const t = await opts.ptyTunnels.create(req.principal.accountId, req.params.id);
    return { auth_token: t.authToken, tunnel_key: t.key };
  });
});
