import { Type } from 'typebox';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import { TunnelParamsSchema, TunnelViewSchema } from '../../devboxes/index.js';
import { toView, type TunnelService } from '../tunnel-service.js';
import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

export interface TunnelRouteOptions {
  tunnels: TunnelService;
}

/** The tunnel routes in the API reference (/docs). */
const operations: OperationDocs = {
  tag: 'Tunnels',
  operations: {
    'POST /v1/devboxes/{id}/enable_tunnel': {
      sdk: ['devboxes.enableTunnel'],
      summary: "Open a tunnel to a devbox's ports",
      description:
        'Gives a running box a `tunnel_key`: every port is then reached at `{port}-{tunnel_key}.tunnel.<domain>` (or `/tunnel/{tunnel_key}/{port}/`) ' +
        'on this server, HTTP and WebSocket. `auth_mode: authenticated` requires `X-Runloop-Tunnel-Authorization: Bearer <auth_token>`; ' +
        '`wake_on_http` resumes a suspended box on a request. A box that is not running, or has a tunnel, is a 400.',
    },
    'POST /v1/devboxes/{id}/remove_tunnel': {
      sdk: ['devboxes.removeTunnel'],
      summary: "Close a devbox's tunnel",
      description: 'Closes the tunnel at once; answers `{}`, also when there was none.',
    },
  },
};

/** enable_tunnel and remove_tunnel; the traffic itself goes through `TunnelFront`, ahead of the API. */
export const tunnelRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', operations, (app, opts: TunnelRouteOptions) => {
  const { tunnels } = opts;

  // 400 unless the box runs, or when it has a tunnel already (the API's answers).
  app.post(
    '/v1/devboxes/:id/enable_tunnel',
    { schema: { params: DevboxIdParams, body: TunnelParamsSchema, response: replies(TunnelViewSchema) } },
    async (req) => {
      const b = req.body;
      const t = await tunnels.enable(req.principal.accountId, req.params.id, {
        authMode: b.auth_mode,
        httpKeepAlive: b.http_keep_alive,
        wakeOnHttp: b.wake_on_http,
      });
      return toView(t)!;
    },
  );

  app.post('/v1/devboxes/:id/remove_tunnel', { schema: { params: DevboxIdParams, response: replies(Type.Object({})) } }, async (req) => {
    await tunnels.remove(req.principal.accountId, req.params.id);
    return {};
  });
});
