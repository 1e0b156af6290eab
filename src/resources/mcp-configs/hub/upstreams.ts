import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../../lib/logger.js';
import type { McpConfig } from '../types.js';

export interface UpstreamOptions {
  /** Connecting (the initialize handshake) and listing tools must finish within this long. */
  connectTimeoutMs: number;
  /** A tool call must finish within this long (progress notifications do not extend it). */
  callTimeoutMs: number;
}

/** The headers an upstream request carries: the credential per `auth_mechanism`, then the custom headers. */
export type HeaderSource = (config: McpConfig, secretId: string) => Promise<[string, string][]>;

interface Entry {
  key: string;
  boxId: string;
  client: Promise<Client>;
}

/**
 * The hub's clients of upstream MCP servers, one per box, config and secret (and config version: an edited
 * config gets a new connection). They use the SDK's Streamable HTTP client transport, so the upstream sees
 * an ordinary MCP client; they close when their box stops. A client whose transport failed or timed out is
 * dropped, and the next call connects afresh.
 */
export class Upstreams {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly headers: HeaderSource,
    private readonly opts: UpstreamOptions,
    private readonly log: Logger,
  ) {}

  async listTools(boxId: string, config: McpConfig, secretId: string): Promise<Tool[]> {
    return this.use(boxId, config, secretId, async (client) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.opts.connectTimeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor && tools.length < 10_000);
      return tools;
    });
  }

  /** `signal`: the box's client went away; the upstream is told the call is cancelled. */
  async callTool(boxId: string, config: McpConfig, secretId: string, name: string, args: Record<string, unknown> | undefined, signal?: AbortSignal): Promise<CallToolResult> {
    return this.use(boxId, config, secretId, (client) =>
      client.callTool({ name, arguments: args }, undefined, { timeout: this.opts.callTimeoutMs, signal }) as Promise<CallToolResult>,
    signal);
  }

  /** Closes the box's upstream connections (the box stopped). */
  closeBox(boxId: string): void {
    for (const e of [...this.entries.values()]) if (e.boxId === boxId) this.drop(e);
  }

  closeAll(): void {
    for (const e of [...this.entries.values()]) this.drop(e);
  }

  private async use<T>(boxId: string, config: McpConfig, secretId: string, fn: (c: Client) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const e = this.entry(boxId, config, secretId);
    try {
      return await fn(await e.client);
    } catch (err) {
      // An upstream's own JSON-RPC error leaves the connection usable; anything else (refused, reset,
      // timed out, session lost) ends it.
      // (A call the box abandoned leaves it usable too.)
      const answered = err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed;
      if (!answered && !signal?.aborted) this.drop(e);
      throw upstreamError(config, err);
    }
  }

  private entry(boxId: string, config: McpConfig, secretId: string): Entry {
    const key = `${boxId}|${config.id}|${secretId}`;
    const version = `${key}|${config.updateTimeMs}`;
    const existing = this.entries.get(key);
    if (existing?.key === version) return existing;
    if (existing) this.drop(existing);
    const e: Entry = { key: version, boxId, client: this.connect(config, secretId) };
    this.entries.set(key, e);
    return e;
  }

  private async connect(config: McpConfig, secretId: string): Promise<Client> {
    const headers = new Headers();
    for (const [name, value] of await this.headers(config, secretId)) headers.set(name, value);
    const transport = new StreamableHTTPClientTransport(new URL(config.endpoint), { requestInit: { headers } });
    const client = new Client({ name: 'devboxd-mcp-hub', version: '1.0.0' });
    client.onerror = (err) => this.log.debug({ err, mcpConfig: config.id }, 'upstream MCP transport error');
    await client.connect(transport, { timeout: this.opts.connectTimeoutMs });
    return client;
  }

  private drop(e: Entry): void {
    for (const [k, v] of this.entries) if (v === e) this.entries.delete(k);
    e.client.then((c) => c.close()).catch(() => undefined);
  }
}

/** What the box sees of an upstream failure: which upstream, and why, as an MCP error (never the credential). */
function upstreamError(config: McpConfig, err: unknown): McpError {
  const where = `upstream MCP server of config ${config.id} (${config.name})`;
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return new McpError(ErrorCode.RequestTimeout, `${where} did not answer in time`);
    return new McpError(err.code, `${where}: ${err.message.replace(/^MCP error -?\d+: /, '')}`, err.data);
  }
  return new McpError(ErrorCode.InternalError, `${where} is unavailable: ${rootCause(err)}`);
}

/** The innermost cause's code (ECONNREFUSED) or message: `fetch failed` alone says nothing. */
function rootCause(err: unknown): string {
  let e = err as { cause?: unknown; code?: string; message?: string } | undefined;
  for (let i = 0; i < 5 && e?.cause; i++) e = e.cause as typeof e;
  return e?.code ?? e?.message ?? String(err);
}
