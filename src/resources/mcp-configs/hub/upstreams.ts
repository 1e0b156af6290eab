import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../../lib/logger.js';
import { DomainError } from '../../../platform/errors.js';
import { type LazyAgent, OutboundGuard, outboundRefusal } from '../../../platform/outbound/index.js';
import type { McpConfig } from '../types.js';

export interface UpstreamOptions {
  /** Connecting (the initialize handshake) and listing tools must finish within this long. */
  connectTimeoutMs: number;
  /** A tool call must finish within this long (progress notifications do not extend it). */
  callTimeoutMs: number;
}

/**
 * The headers an upstream request carries: the credential per `auth_mechanism`, then the custom headers,
 * read afresh at each request (a deleted or updated secret applies at once). It throws an McpError that
 * names the secret or header, never the value, when one cannot be sent.
 */
export type HeaderSource = (config: McpConfig, secretId: string) => Promise<[string, string][]>;

/** Largest answer of an upstream to one request: past it the call fails (the hub holds each answer whole). */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** Pages of one `tools/list` (an upstream that keeps handing out cursors does not keep the hub looping). */
const MAX_LIST_PAGES = 100;

class AnswerTooLarge extends Error {
  constructor() {
    super(`its answer is larger than ${MAX_ANSWER_BYTES} bytes`);
  }
}

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
  /**
   * A request that began before its box stopped may connect after `closeBox`: it closes its connection when
   * it ends. `closes` holds, per box, the count of `use` calls begun when the box last stopped; it empties
   * whenever no call is running.
   */
  private begun = 0;
  private running = 0;
  private readonly closes = new Map<string, number>();
  /** Every upstream connection (and each redirect's) passes the outbound guard. */
  private readonly agent: LazyAgent;
  private readonly fetch: (url: string | URL, init?: RequestInit) => Promise<Response>;

  constructor(
    private readonly headers: HeaderSource,
    private readonly opts: UpstreamOptions,
    private readonly log: Logger,
    outbound: OutboundGuard,
  ) {
    this.agent = outbound.agent({ connect: { timeout: opts.connectTimeoutMs } });
    this.fetch = limitedFetch(OutboundGuard.fetch(this.agent));
  }

  /** `signal`: the box's client went away; no further page is asked for. */
  async listTools(boxId: string, config: McpConfig, secretId: string, signal?: AbortSignal): Promise<Tool[]> {
    return this.use(
      boxId,
      config,
      secretId,
      async (client) => {
        const tools: Tool[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.opts.connectTimeoutMs, signal });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor && tools.length < 10_000 && ++pages < MAX_LIST_PAGES);
        return tools;
      },
      signal,
    );
  }

  /** `signal`: the box's client went away; the upstream is told the call is cancelled. */
  async callTool(
    boxId: string,
    config: McpConfig,
    secretId: string,
    name: string,
    args: Record<string, unknown> | undefined,
    signal?: AbortSignal,
  ): Promise<CallToolResult> {
    return this.use(
      boxId,
      config,
      secretId,
      (client) => client.callTool({ name, arguments: args }, undefined, { timeout: this.opts.callTimeoutMs, signal }) as Promise<CallToolResult>,
      signal,
    );
  }

  /** Closes the box's upstream connections (the box stopped). */
  closeBox(boxId: string): void {
    if (this.running) this.closes.set(boxId, this.begun);
    for (const e of [...this.entries.values()]) if (e.boxId === boxId) this.drop(e);
  }

  closeAll(): void {
    for (const e of [...this.entries.values()]) this.drop(e);
  }

  /** Closes every client and the connections kept alive under them (the server stops). */
  async close(): Promise<void> {
    this.closeAll();
    await this.agent.close();
  }

  /** Upstream connections open now. */
  get size(): number {
    return this.entries.size;
  }

  private async use<T>(boxId: string, config: McpConfig, secretId: string, fn: (c: Client) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const call = ++this.begun;
    this.running++;
    let e: Entry | undefined;
    try {
      return await this.useEntry(boxId, config, secretId, fn, (x) => (e = x), signal);
    } finally {
      const closedAt = this.closes.get(boxId);
      if (e && closedAt !== undefined && closedAt >= call) this.drop(e);
      if (--this.running === 0) this.closes.clear();
    }
  }

  private async useEntry<T>(
    boxId: string,
    config: McpConfig,
    secretId: string,
    fn: (c: Client) => Promise<T>,
    got: (e: Entry) => void,
    signal?: AbortSignal,
  ): Promise<T> {
    let headers: [string, string][];
    try {
      headers = await this.headers(config, secretId);
    } catch (err) {
      // Our own McpError and the not-found errors name the secret; anything else (a seal that does not
      // open) gets a fixed text, so no message of the header step can carry a value.
      if (err instanceof McpError) throw upstreamError(config, err);
      const why = err instanceof DomainError ? err.message : 'the credential or a custom header could not be read';
      throw upstreamError(config, new McpError(ErrorCode.InternalError, why));
    }
    const e = this.entry(boxId, config, secretId, headers);
    got(e);
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

  /** The version of a connection is its endpoint and its headers: a new secret value gets a new connection. */
  private entry(boxId: string, config: McpConfig, secretId: string, headers: [string, string][]): Entry {
    const key = `${boxId}|${config.id}|${secretId}`;
    const version = createHash('sha256')
      .update(JSON.stringify([config.endpoint, headers]))
      .digest('base64');
    const existing = this.entries.get(key);
    if (existing?.key === version) return existing;
    if (existing) this.drop(existing);
    const e: Entry = { key: version, boxId, client: this.connect(config, headers) };
    this.entries.set(key, e);
    return e;
  }

  private async connect(config: McpConfig, values: [string, string][]): Promise<Client> {
    const headers = new Headers();
    for (const [name, value] of values) {
      try {
        headers.set(name, value);
      } catch {
        // Headers' own message quotes the value.
        throw new McpError(ErrorCode.InternalError, `the header ${name} is not a valid HTTP header value`);
      }
    }
    const transport = new StreamableHTTPClientTransport(new URL(config.endpoint), { requestInit: { headers }, fetch: this.fetch });
    const client = new Client({ name: 'devboxd-mcp-hub', version: '1.0.0' });
    client.onerror = (err) => this.log.debug({ mcpConfig: config.id, err: err.message }, 'upstream MCP transport error');
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

/** fetch, with each answer to a POST cut past MAX_ANSWER_BYTES (a long-lived GET event stream is not counted). */
const limitedFetch =
  (fetch: typeof globalThis.fetch) =>
  async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(url, init);
    if (init?.method !== 'POST' || !res.body || res.status < 200 || res.status >= 300) return res;
    let bytes = 0;
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, ctl) {
          bytes += chunk.byteLength;
          if (bytes > MAX_ANSWER_BYTES) ctl.error(new AnswerTooLarge());
          else ctl.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

/** The innermost cause's code (ECONNREFUSED) or message: `fetch failed` alone says nothing. */
function rootCause(err: unknown): string {
  const refused = outboundRefusal(err);
  if (refused) return refused.message;
  let e = err as { cause?: unknown; code?: string; message?: string } | undefined;
  for (let i = 0; i < 5 && e?.cause; i++) e = e.cause as typeof e;
  return e?.code ?? e?.message ?? String(err);
}
