import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../../lib/logger.js';
import type { OutboundGuard } from '../../../platform/outbound/index.js';
import type { McpTokens } from '../mcp-tokens.js';
import type { McpHub } from './hub-handler.js';
import type { HeaderSource, UpstreamOptions, Upstreams } from './upstreams.js';

export interface HubDeps {
  tokens: McpTokens;
  headers: HeaderSource;
  timeouts: UpstreamOptions;
  log: Logger;
  outbound: OutboundGuard;
}

/**
 * The hub and its upstream clients, made with the MCP SDK at a box's first MCP request. The SDK, and the zod
 * schemas it builds as it loads, would cost every start about 100 ms of CPU, on servers where most boxes never
 * call the hub; what the rest of the module needs (configs, tokens, the box's environment) does not load it.
 */
export class LazyHub {
  private parts: Promise<{ hub: McpHub; upstreams: Upstreams }> | undefined;

  constructor(private readonly deps: HubDeps) {}

  private load(): Promise<{ hub: McpHub; upstreams: Upstreams }> {
    this.parts ??= (async () => {
      const [{ McpHub }, { ToolRouter }, { Upstreams }] = await Promise.all([import('./hub-handler.js'), import('./tool-router.js'), import('./upstreams.js')]);
      const { tokens, headers, timeouts, log, outbound } = this.deps;
      const upstreams = new Upstreams(headers, timeouts, log, outbound);
      return { hub: new McpHub(tokens, new ToolRouter(upstreams, log), log), upstreams };
    })();
    return this.parts;
  }

  /** The box-services handler for `/mcp`. */
  readonly handle = async (req: IncomingMessage, res: ServerResponse, boxId: string): Promise<void> => (await this.load()).hub.handle(req, res, boxId);

  /** The box stopped: its upstream connections close (there are none before the hub was first called). */
  closeBox(boxId: string): void {
    this.parts?.then((p) => p.upstreams.closeBox(boxId)).catch(() => undefined);
  }

  /** Closes the upstream clients, if the hub was ever loaded (a load that failed left none). */
  async close(): Promise<void> {
    const parts = await this.parts?.catch(() => undefined);
    await parts?.upstreams.close();
  }
}
