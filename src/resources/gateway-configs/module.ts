import type { Module } from '../../host.js';
import { boxServicesUrl } from '../../platform/boxlink/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { secretsModule } from '../secrets/index.js';
import { type AgentGateway, buildAgentGateway, GATEWAY_PREFIX, GATEWAY_SCHEMA, gatewayRoutes } from './build.js';
import { GATEWAY_SEALED } from './reseal.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** The agent gateway: gateway configs, the boxes' tokens and the proxy boxes reach them through. */
    gateway: AgentGateway;
  }
}

/** Gateway configs: boxes call upstream APIs through the gateway with a token; the credential stays here. */
export const gatewayConfigsModule: Module = {
  name: 'gateway-configs',
  needs: [devboxesModule, secretsModule],
  schema: GATEWAY_SCHEMA,
  sealed: GATEWAY_SEALED,
  build({ host, use }) {
    const secrets = use('secrets');
    const gateway = buildAgentGateway(host.store, {
      secrets: () => secrets,
      sealer: () => host.sealer,
      baseUrl: boxServicesUrl(host.config),
      outbound: host.outbound,
      log: host.logger.child({ component: 'gateway' }),
    });
    host.boxServices.route(GATEWAY_PREFIX, gateway.proxy.handle);
    const ext = use('devboxExtensions');
    ext.resolver(gateway.devbox.resolver);
    ext.environment(gateway.devbox.environment);
    ext.enricher(gateway.devbox.enricher);
    ext.onStopped(gateway.devbox.onStopped);
    return { gateway };
  },
  routes: (app, s) => app.register(gatewayRoutes, { gatewayConfigs: s.gateway.configs, gatewayBindings: s.gateway.bindings, devboxes: s.devboxes }),
  start: { reconcile: (s) => s.gateway.bindings.reconcile() },
  close: (s) => s.gateway.proxy.close(),
};
