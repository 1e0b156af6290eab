import { Type } from 'typebox';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, replies } from '../../../platform/http/schemas/common.js';
import type { DevboxService } from '../../devboxes/index.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import type { GatewayBindings } from '../gateway-bindings.js';
import { AuthMechanismViewSchema, authView } from './schemas.js';

const TokenBody = Body({
  gateway: Type.String({ minLength: 1, maxLength: 256 }),
  secret: Type.String({ minLength: 1, maxLength: 256 }),
});

const GatewayTokenViewSchema = Type.Object(
  {
    token: Type.String(),
    auth_mechanism: AuthMechanismViewSchema,
    devbox_id: Type.String(),
    endpoint: Type.String(),
    gateway_config_id: Type.String(),
    url: Type.String(),
  },
  { title: 'GatewayTokenView', description: 'a token a devbox uses to reach the agent gateway' },
);

/**
 * A token is a devbox write, like creating a box with `gateways` (and like create_mcp_token). A retried
 * x-request-id answers the same token: the answer is kept sealed under the server key for the replay window,
 * never in clear.
 */
const config = { resource: 'RESOURCE_TYPE_DEVBOXES' as const, idempotent: 'sealed' as const };

export function tokenRoutes(app: Api, bindings: GatewayBindings, devboxes: DevboxService): void {
  app.post(
    '/v1/devboxes/:id/create_gateway_token',
    { schema: { params: DevboxIdParams, body: TokenBody, response: replies(GatewayTokenViewSchema) }, config },
    async (req) => {
      const devbox = await devboxes.get(req.principal.accountId, req.params.id);
      const t = await bindings.mint(devbox, req.body.gateway, req.body.secret);
      return {
        token: t.token,
        auth_mechanism: authView(t.config.auth),
        devbox_id: t.devboxId,
        endpoint: t.config.endpoint,
        gateway_config_id: t.config.id,
        url: t.url,
      };
    },
  );
}
