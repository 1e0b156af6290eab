import type { IncomingMessage, ServerResponse } from 'node:http';
import { type LazyAgent, type OutboundGuard, outboundRefusal } from '../../../platform/outbound/index.js';
import { DomainError } from '../../../platform/errors.js';
import type { Logger } from '../../../lib/logger.js';
import type { GatewayAccess } from '../gateway-access.js';
import { HOP_BY_HOP } from '../../../platform/http/hop-by-hop.js';
import { answerSent } from '../../../platform/http/request-signal.js';

/** The path under the box services where the gateway answers: `/gateway/<binding id>/<upstream path>`. */
export const GATEWAY_PREFIX = '/gateway';

export interface ProxyOptions {
  /** Longest wait for the upstream's response headers (then 504). LLM calls that do not stream take minutes. */
  headersTimeoutMs?: number;
  /** Longest silence between two chunks of the upstream's body (then the answer is cut). */
  bodyTimeoutMs?: number;
  /** Longest wait for a connection to the upstream (then 504). */
  connectTimeoutMs?: number;
  /**
   * Longest time the box's connection may make no progress while a request is open: a box that stops
   * reading its answer (undici's body timeout does not run while the box holds it back) loses it, and the
   * upstream connection goes with it.
   */
  stallTimeoutMs?: number;
}

/**
 * A `.` or `..` segment, as a normalizing upstream or front end reads the path: with `%2e`, `%2f` and `%5c`
 * decoded and a backslash taken as a slash. An encoded slash alone stays allowed (`group%2Fproject`).
 */
function leavesPath(path: string): boolean {
  const decoded = path.replace(/%2e/gi, '.').replace(/%2f/gi, '/').replace(/%5c/gi, '\\');
  return decoded.split(/[/\\]/).some((seg) => seg === '.' || seg === '..');
}

/** Hop-by-hop headers and what the gateway writes itself: never forwarded as sent. */
const DROP_REQUEST = new Set([...HOP_BY_HOP, 'host', 'expect', 'authorization']);
const DROP_RESPONSE = new Set(HOP_BY_HOP);

/** Drops hop-by-hop headers, those the Connection header names, and `extra`. */
function forwardable(headers: IncomingMessage['headers'], drop: Set<string>, extra: Iterable<string> = []): Record<string, string | string[]> {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const skip = new Set([...drop, ...named, ...extra]);
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !skip.has(k)) out[k] = v;
  return out;
}

function sendError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** How long the response head may wait to leave with the body's first bytes. */
const HEAD_DELAY_MS = 50;

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * The agent gateway: a box-services handler that forwards a box's request to its binding's upstream with the
 * real credential in place of the box's token. Bodies stream both ways through undici (no buffering: a
 * server-sent event reaches the box as the upstream writes it); connections to each upstream are kept alive.
 */
export class GatewayProxy {
  private readonly agent: LazyAgent;
  private readonly stallMs: number;

  constructor(
    private readonly access: GatewayAccess,
    outbound: OutboundGuard,
    private readonly log: Logger,
    opts: ProxyOptions = {},
  ) {
    this.agent = outbound.agent({
      headersTimeout: opts.headersTimeoutMs ?? 600_000,
      bodyTimeout: opts.bodyTimeoutMs ?? 600_000,
      connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
      keepAliveTimeout: 4_000,
    });
    this.stallMs = opts.stallTimeoutMs ?? Math.max(opts.headersTimeoutMs ?? 600_000, opts.bodyTimeoutMs ?? 600_000);
  }

  /** The BoxServiceHandler for GATEWAY_PREFIX. */
  readonly handle = async (req: IncomingMessage, res: ServerResponse, boxId: string): Promise<void> => {
    const rest = (req.url ?? '/').slice(GATEWAY_PREFIX.length);
    const m = /^\/([A-Za-z0-9_]{1,200})(\/[^?]*|)(\?.*|)$/s.exec(rest);
    if (!m) return sendError(res, 404, 'no gateway here: use the URL in $<PREFIX>_URL');
    const [, bindingId, path, query] = m as unknown as [string, string, string, string];
    // The endpoint's path prefixes every proxied path: `..`, `.`, encoded slashes and backslashes would leave it.
    if (leavesPath(path))
      return sendError(res, 400, 'the path must not contain "." or ".." segments (encoded or behind a backslash): it stays under the endpoint\'s path');
    res.setTimeout(this.stallMs, () => res.destroy());
    let plan;
    try {
      plan = await this.access.plan(boxId, bindingId, req.headers.authorization);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      // A deleted config or secret (or one that cannot be sent) is the gateway's failure, not the box's.
      return sendError(res, err.status === 401 ? 401 : 502, err.message);
    }
    const headers = forwardable(
      req.headers,
      DROP_REQUEST,
      plan.headers.map(([k]) => k),
    );
    for (const [k, v] of plan.headers) headers[k] = v;
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const abort = new AbortController();
    res.on('close', () => {
      if (!answerSent(res)) abort.abort();
    });
    try {
      await this.agent.stream(
        {
          origin: plan.origin,
          path: `${plan.basePath}${path || (plan.basePath ? '' : '/')}${query}`,
          method: req.method as 'GET',
          headers,
          body: hasBody ? req : null,
          signal: abort.signal,
        },
        ({ statusCode, headers: upstream }) => {
          // The head leaves with the first bytes of the body (one write, not two: a second small segment
          // on the box's TCP connection would wait for the client's delayed ACK), unless the body is slow to
          // come: an event stream's first event may be seconds away, and the box must not wait for its head.
          res.writeHead(statusCode, forwardable(upstream, DROP_RESPONSE));
          if (String(upstream['content-type'] ?? '').startsWith('text/event-stream')) res.flushHeaders();
          else {
            // (Once the body's first bytes went with it, flushing sends nothing more.)
            const head = setTimeout(() => res.writableEnded || res.flushHeaders(), HEAD_DELAY_MS);
            res.once('finish', () => clearTimeout(head)).once('close', () => clearTimeout(head));
          }
          return res;
        },
      );
    } catch (err) {
      if (abort.signal.aborted) return;
      const code = (err as { code?: string }).code ?? '';
      const refused = outboundRefusal(err);
      if (refused) return sendError(res, 502, `the upstream ${plan.origin} is not reachable: ${refused.message}`);
      if (TIMEOUTS.has(code)) return sendError(res, 504, `the upstream ${plan.origin} did not answer in time`);
      // undici's InvalidArgumentError (a header value it cannot send), by its code: undici loads at first use.
      if (code === 'UND_ERR_INVALID_ARG') return sendError(res, 400, `the request cannot be forwarded: ${(err as Error).message}`);
      this.log.debug({ err: (err as Error).message, code, devbox: boxId, upstream: plan.origin }, 'gateway upstream failed');
      sendError(res, 502, `the upstream ${plan.origin} failed: ${code || (err as Error).message}`);
    }
  };

  close(): Promise<void> {
    return this.agent.close();
  }
}
