import { resourceModule } from '../../../platform/http/resource-module.js';
import type { DevboxService } from '../../devboxes/index.js';
import type { GatewayBindings } from '../gateway-bindings.js';
import type { GatewayConfigService } from '../gateway-config-service.js';
import { configRoutes } from './configs.js';
import { gatewayOperations } from './operations.js';
import { tokenRoutes } from './token.js';

export interface GatewayRouteOptions {
  gatewayConfigs: GatewayConfigService;
  gatewayBindings: GatewayBindings;
  devboxes: DevboxService;
}

/**
 * Gateway configs (/v1/gateway-configs) and the devbox's create_gateway_token. The SDK's restricted-key
 * scopes have no gateway type, so configs are account resources (RESOURCE_TYPE_ACCOUNT); minting a token
 * is a devbox write (see token.ts).
 */
export const gatewayRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', gatewayOperations, (scope, opts: GatewayRouteOptions) => {
  configRoutes(scope, opts.gatewayConfigs);
  tokenRoutes(scope, opts.gatewayBindings, opts.devboxes);
});
