import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../platform/store/types.js';
import type { OutboundGuard } from '../../platform/outbound/index.js';
import type { CreateResolver, EnvironmentProvider, StopListener, ViewEnricher } from '../devboxes/index.js';
import { GatewayAccess } from './gateway-access.js';
import { GatewayBindings } from './gateway-bindings.js';
import { GatewayConfigService } from './gateway-config-service.js';
import { GatewayProxy, GATEWAY_PREFIX, type ProxyOptions } from './routes/box-proxy.js';
import { SqlGatewayStore } from './sql-gateway-store.js';
import type { SecretLookup, TokenSealer } from './types.js';

export { GATEWAY_SCHEMA } from './schema.js';
export { gatewayRoutes } from './routes/index.js';
export { GATEWAY_PREFIX };

export interface AgentGateway {
  configs: GatewayConfigService;
  bindings: GatewayBindings;
  /** The box-services handler for GATEWAY_PREFIX. */
  proxy: GatewayProxy;
  /** What the gateway contributes to the devbox core (registered by module.ts). */
  devbox: { resolver: CreateResolver; environment: EnvironmentProvider; enricher: ViewEnricher; onStopped: StopListener };
}

export interface AgentGatewayOptions {
  secrets: () => SecretLookup;
  sealer: () => TokenSealer;
  /** Where boxes reach the box services (`http://127.0.0.1:<port>`). */
  baseUrl: string;
  log: Logger;
  /** The outbound guard: endpoints refused at create, upstream connections checked at use. */
  outbound: OutboundGuard;
  proxy?: ProxyOptions;
}

/** Builds the agent gateway's services over the store (its tables: schema.ts). */
export function buildAgentGateway(store: Store, opts: AgentGatewayOptions): AgentGateway {
  const configs = new GatewayConfigService(new SqlGatewayStore(store.db), opts.secrets, opts.sealer, opts.outbound);
  const bindings = new GatewayBindings(store, configs, opts.secrets, opts.sealer, { baseUrl: opts.baseUrl }, opts.log);
  const proxy = new GatewayProxy(new GatewayAccess(store, opts.secrets, opts.sealer), opts.outbound, opts.log, opts.proxy);
  return {
    configs,
    bindings,
    proxy,
    devbox: {
      resolver: (accountId, input) => bindings.resolve(accountId, input),
      environment: (d) => bindings.environment(d),
      // The view's bindings (those with a prefix) are made at create only; minted tokens do not show.
      enricher: { part: 'gateway', none: {}, enrich: (d) => bindings.enrich(d) },
      onStopped: (id) => void bindings.stopped(id).catch((err) => opts.log.error({ err, devbox: id }, 'gateway tokens of an ended box not removed')),
    },
  };
}

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './reseal.js';
