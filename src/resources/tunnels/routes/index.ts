import { Type } from 'typebox';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import { TunnelParamsSchema, TunnelViewSchema } from '../../devboxes/index.js';
import { toView, type TunnelService } from '../tunnel-service.js';

export interface TunnelRouteOptions {
  tunnels: TunnelService;
}

/** enable_tunnel and remove_tunnel; the traffic itself goes through `TunnelFront`, ahead of the API. */
export const tunnelRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', (app, opts: TunnelRouteOptions) => {
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
