import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpConfigService } from '../mcp-config-service.js';
import type { McpConfig, SecretReader } from '../types.js';

/**
 * The credential per `auth_mechanism`, then the custom headers (which may override it). A value that cannot
 * be sent (a line break inside, a character past U+00FF) is an MCP error naming the secret or the header.
 */
export async function upstreamHeaders(configs: McpConfigService, secrets: SecretReader, config: McpConfig, secretId: string): Promise<[string, string][]> {
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
