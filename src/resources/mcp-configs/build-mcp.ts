import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../lib/logger.js';
import type { OutboundGuard } from '../../platform/outbound/index.js';
import type { Store } from '../../platform/store/types.js';
import { mcpDevboxExtensions } from './devbox-extensions.js';
import { McpHub } from './hub/hub-handler.js';
import { ToolRouter } from './hub/tool-router.js';
import { Upstreams, type UpstreamOptions } from './hub/upstreams.js';
import { McpConfigService } from './mcp-config-service.js';
import { McpTokens } from './mcp-tokens.js';
import { SqlMcpTokenStore } from './sql-mcp-token-store.js';
import type { McpConfig, SecretReader, Sealer } from './types.js';

/** Upstream timeouts: a server that is down or stalls gives the box an MCP error, never a hang. */
export const UPSTREAM_TIMEOUTS: UpstreamOptions = { connectTimeoutMs: 10_000, callTimeoutMs: 60_000 };

/**
 * The credential per `auth_mechanism`, then the custom headers (which may override it). A value that cannot
 * be sent (a line break inside, a character past U+00FF) is an MCP error naming the secret or the header.
 */
async function upstreamHeaders(configs: McpConfigService, secrets: SecretReader, config: McpConfig, secretId: string): Promise<[string, string][]> {
  const secret = (await secrets.reveal(config.accountId, secretId)).value;
  const credential: [string, string] =
    config.auth.type === 'header'
      ? [config.auth.key!, secret]
      : config.auth.type === 'basic'
        ? ['authorization', `Basic ${Buffer.from(secret, 'utf8').toString('base64')}`]
        : ['authorization', `Bearer ${secret}`];
  if (!sendable(credential[1])) throw unsendable(`the value of secret ${secretId}`, credential[0]);
  const custom = await configs.headerValues(config);
  for (const [name, value, from] of custom) if (!sendable(value)) throw unsendable(from ? `the value of secret ${from}` : 'its value', name);
  return [credential, ...custom.map(([n, v]): [string, string] => [n, v])];
}

/** What `Headers` sends: surrounding whitespace is trimmed, then no CR, LF or NUL and nothing past U+00FF. */
const sendable = (value: string): boolean => /^[\t\x20-\x7e\x80-\xff]*$/.test(value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, ''));
const unsendable = (what: string, header: string) =>
  new McpError(ErrorCode.InternalError, `${what} cannot be sent as the ${header} header (a line break or a character past U+00FF inside)`);

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
  const upstreams = new Upstreams((c, s) => upstreamHeaders(configs, secrets, c, s), deps.timeouts ?? UPSTREAM_TIMEOUTS, log, outbound);
  const hub = new McpHub(tokens, new ToolRouter(upstreams, log), log);
  return {
    configs,
    tokens,
    upstreams,
    hub,
    hubUrl,
    devbox: mcpDevboxExtensions({ store, tokens, upstreams, hubUrl, log }),
    /** Tokens of boxes that ended while no server ran go at start. */
    reconcile: () => new SqlMcpTokenStore(store.db).deleteTokensOfEndedBoxes(),
    close: () => upstreams.close(),
  };
}

export type McpModule = ReturnType<typeof buildMcp>;
