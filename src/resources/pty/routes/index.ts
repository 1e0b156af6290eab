import { Type } from 'typebox';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import type { PtyTunnels } from '../pty-tunnels.js';
import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

export interface PtyRouteOptions {
  ptyTunnels: PtyTunnels;
}

const PtyTunnelViewSchema = Type.Object(
  {
    auth_token: Type.String({ description: 'Bearer token every request on the tunnel carries as X-Runloop-Tunnel-Authorization: Bearer <auth_token>' }),
    tunnel_key: Type.String({ description: 'The tunnel host name is {port}-{tunnel_key}.tunnel.<domain> (any port)' }),
  },
  { title: 'PtyTunnelView', description: 'a fresh tunnel to the PTY endpoints of the box' },
);

/** create_pty_tunnel in the API reference (/docs); the PTY endpoints are not API routes. */
const operations: OperationDocs = {
  tag: 'Tunnels',
  operations: {
    'POST /v1/devboxes/{id}/create_pty_tunnel': {
      sdk: ['devboxes.createPtyTunnel'],
      summary: 'Open a tunnel for terminal sessions',
      description:
        "A fresh `{tunnel_key, auth_token}` on every call (not on the devbox view) for the box's PTY endpoints: `GET /pty/{session_name}` " +
        "and its WebSocket on the tunnel's host name, as the SDK's `pty` resource calls them. Tunnels last until the box ends, restarts " +
        'of the server included. A box that is not running is a 400.',
    },
  },
};

/** create_pty_tunnel; the PTY endpoints themselves are served on the tunnel's host name by `PtyFront`. */
export const ptyRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', operations, (app, opts: PtyRouteOptions) => {
  // A fresh tunnel on every call, never on the devbox view; 400 unless the box runs. A retried x-request-id
  // answers the same tunnel, its token kept sealed for the replay window (never in clear).
  const config = { resource: 'RESOURCE_TYPE_DEVBOXES' as const, idempotent: 'sealed' as const };
  app.post('/v1/devboxes/:id/create_pty_tunnel', { schema: { params: DevboxIdParams, response: replies(PtyTunnelViewSchema) }, config }, async (req) => {
    const t = await opts.ptyTunnels.create(req.principal.accountId, req.params.id);
    return { auth_token: t.authToken, tunnel_key: t.key };
  });
});
