import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Logger } from '../../../lib/logger.js';
import type { McpTokens, TokenScope } from '../mcp-tokens.js';
import type { ToolRouter } from './tool-router.js';

/** Largest JSON-RPC body a box may send the hub. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Idle servers kept for reuse (as many as requests ran at once, up to this). */
const MAX_IDLE_SERVERS = 64;

/**
 * The MCP hub: an MCP server (the official SDK's `Server` over its Streamable HTTP transport) that boxes reach
 * at `/mcp` on the box-services link. It is stateless: every POST is answered on its own transport, for what
 * its bearer token reaches, and answers with plain JSON (a client that accepts only `application/json` gets JSON-RPC
 * answers; one that also accepts SSE gets the same, which the protocol allows). The box id comes from the
 * connection, never from the request, and a token of another box is refused like an unknown one.
 */
export class McpHub {
  constructor(
    private readonly tokens: McpTokens,
    private readonly router: ToolRouter,
    private readonly log: Logger,
  ) {}

  private readonly idle: Server[] = [];

  /** The box-services handler for `/mcp`. */
  readonly handle = async (req: IncomingMessage, res: ServerResponse, boxId: string): Promise<void> => {
    if (req.method !== 'POST') {
      // Stateless: there is no session to stream to (GET) or to end (DELETE).
      res.setHeader('allow', 'POST');
      return sendRpcError(res, 405, -32000, 'Method not allowed: the MCP hub takes JSON-RPC over POST');
    }
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    const scope = bearer ? await this.tokens.authenticate(boxId, bearer) : undefined;
    if (!scope) {
      req.resume();
      res.setHeader('www-authenticate', 'Bearer realm="devboxd-mcp-hub"');
      return sendRpcError(res, 401, -32001, 'Unauthorized: send Authorization: Bearer $RL_MCP_TOKEN (or the token of an mcp entry) from the box it was made for');
    }
    const body = await readBody(req);
    if (body === undefined) return sendRpcError(res, 413, -32000, `Request body larger than ${MAX_BODY_BYTES} bytes`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return sendRpcError(res, 400, -32700, 'Parse error: the body is not JSON');
    }
    // A server from the pool, on a transport of this request's own (a stateless transport serves one
    // request); the token's scope reaches the handlers as the request's auth info.
    const server = this.idle.pop() ?? this.newServer();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await server.connect(transport);
      const context: HubContext = { boxId, scope };
      const answer = transport.handleRequest(toWebRequest(req), { parsedBody: parsed, authInfo: { token: '', clientId: boxId, scopes: [], extra: { context } } });
      // A client that goes away stops the work: closing the transport aborts the handlers (and their upstream calls).
      const gone = new Promise<undefined>((resolve) => res.once('close', () => resolve(undefined)));
      const response = await Promise.race([answer, gone]);
      if (response && !res.destroyed) await sendWebResponse(response, res);
    } finally {
      await server.close();
      if (this.idle.length < MAX_IDLE_SERVERS) this.idle.push(server);
    }
  };

  /**
   * Servers are kept and reused (the SDK allows a new transport once the last is closed): building one costs
   * about as much as answering a call, and the handlers take what differs per request from its auth info.
   */
  private newServer(): Server {
    const server = new Server({ name: 'devboxd-mcp-hub', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
      const { boxId, scope } = contextOf(extra.authInfo);
      return { tools: await this.router.list(boxId, scope) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { boxId, scope } = contextOf(extra.authInfo);
      return this.router.call(boxId, scope, request.params.name, request.params.arguments as Record<string, unknown> | undefined, extra.signal);
    });
    server.onerror = (err) => this.log.debug({ err }, 'MCP hub protocol error');
    return server;
  }
}

interface HubContext {
  boxId: string;
  scope: TokenScope;
}

const contextOf = (auth: AuthInfo | undefined): HubContext => auth?.extra?.context as HubContext;

/** The body, or undefined past the limit. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      req.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The request as the SDK's web-standard transport reads it. Accept gains `text/event-stream`: the transport
 * insists a client accept both, while the hub always answers JSON, which a JSON-only client takes.
 */
function toWebRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name === 'authorization') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  headers.set('accept', 'application/json, text/event-stream');
  return new Request(`http://box-services${req.url ?? '/mcp'}`, { method: 'POST', headers });
}

/** JSON mode: every answer is one JSON body (or none, 202 for notifications), so it is sent whole. */
async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => (headers[k] = v));
  headers['content-length'] = String(body.length);
  res.writeHead(response.status, headers);
  res.end(body);
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  const text = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
