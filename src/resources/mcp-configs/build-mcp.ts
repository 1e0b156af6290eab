import type { Logger } from '../../lib/logger.js';
import type { OutboundGuard } from '../../platform/outbound/index.js';
import type { Store } from '../../platform/store/types.js';
import { mcpDevboxExtensions } from './devbox-extensions.js';
import { LazyHub } from './hub/lazy-hub.js';
import type { UpstreamOptions } from './hub/upstreams.js';
import { McpConfigService } from './mcp-config-service.js';
import { McpTokens } from './mcp-tokens.js';
import { SqlMcpTokenStore } from './sql-mcp-token-store.js';
import type { SecretReader, Sealer } from './types.js';

/** Upstream timeouts: a server that is down or stalls gives the box an MCP error, never a hang. */
export const UPSTREAM_TIMEOUTS: UpstreamOptions = { connectTimeoutMs: 10_000, callTimeoutMs: 60_000 };

/** The MCP configs' services, built once by the module (module.ts). */
export function buildMcp(deps: {
  store: Store;
  secrets: SecretReader;
  sealer: Sealer;
  hubUrl: string;
  log: Logger;
  outbound: OutboundGuard;
  timeouts?: UpstreamOptions;
}) {
  const { store, secrets, sealer, hubUrl, log, outbound } = deps;
  const configs = new McpConfigService(
    store,
    () => secrets,
    () => sealer,
    outbound,
  );
  const tokens = new McpTokens(
    store,
    configs,
    () => secrets,
    () => sealer,
    log,
  );
  const hub = new LazyHub({
    tokens,
    headers: async (c, s) => (await import('./hub/headers.js')).upstreamHeaders(configs, secrets, c, s),
    timeouts: deps.timeouts ?? UPSTREAM_TIMEOUTS,
    log,
    outbound,
  });
  return {
    configs,
    tokens,
    hub,
    hubUrl,
    devbox: mcpDevboxExtensions({ store, tokens, upstreams: hub, hubUrl, log }),
    /** Tokens of boxes that ended while no server ran go at start. */
    reconcile: () => new SqlMcpTokenStore(store.db).deleteTokensOfEndedBoxes(),
    close: () => hub.close(),
  };
}

export type McpModule = ReturnType<typeof buildMcp>;
