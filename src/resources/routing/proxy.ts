import type http from 'node:http';
import type http2 from 'node:http2';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { LazyAgent } from '../../platform/outbound/index.js';
import { HOP_BY_HOP, pump } from '../../platform/http/hop-by-hop.js';
import { PEER_HEADER, type PeerKey } from '../../platform/http/peers.js';
import { answerSent, clientGone } from '../../platform/http/request-signal.js';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
type Headers = Record<string, string | string[] | undefined>;

/** What a hop to a peer never passes on, either way. */
const HOP = new Set([...HOP_BY_HOP, 'http2-settings', 'expect']);

/** Bytes of a peer's answer held for a slow client before the peer's stream is paused. */
const RESPONSE_BUFFER = 256 * 1024;

/** A peer's answer, whole (what a forwarded create or resume answers). */
export interface PeerAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
}

/** The request's host name as sent (HTTP/2 names it in `:authority`). */
export function authorityOf(headers: Headers): string {
  return String(headers[':authority'] ?? headers.host ?? '');
}

/**
 * The request headers a peer gets: the client's own (its Authorization and x-request-id among them: the peer
 * authenticates and claims as usual), less HTTP/2 pseudo-headers and hop-by-hop ones, with the host name the
 * client used, who it is, and this server's signature.
 */
export function peerHeaders(headers: Headers, remote: string | undefined, signature: string, drop: readonly string[] = []): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || k.startsWith(':') || HOP.has(k) || k === PEER_HEADER || drop.includes(k)) continue;
    out[k] = v;
  }
  out.host = authorityOf(headers);
  if (remote) out['x-forwarded-for'] = headers['x-forwarded-for'] ? `${String(headers['x-forwarded-for'])}, ${remote}` : remote;
  out[PEER_HEADER] = signature;
  return out;
}

/** A peer's response headers, less hop-by-hop ones (and its length, when the body is sent again). */
function answerHeaders(headers: Headers, drop: readonly string[] = []): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k) && !drop.includes(k)) out[k] = v;
  return out;
}

/**
 * Requests to other nodes' API servers over kept-alive HTTP/1.1 connections (undici), as many as requests are
 * in flight. No time limits of its own: a forwarded long-poll or stream lasts as long as its client stays, and
 * ends when it goes.
 */
export class PeerClient {
  private readonly agent: LazyAgent;

  constructor(
    private readonly key: PeerKey,
    /** DEVBOXD_CLUSTER_CA: what a peer's https:// certificate is checked against, besides the system's CAs. */
    ca: string | undefined,
  ) {
    // No cap on connections per peer: a stream or long-poll holds its connection for as long as it lasts, and
    // a request queued behind them would wait for nothing.
    this.agent = new LazyAgent((undici) => new undici.Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000, connect: ca ? { ca } : undefined }));
  }

  /**
   * Streams `req` to the peer at `base` and its answer back, both ways with back-pressure (a client that stops
   * reading pauses the peer's stream, a peer that stops reading pauses the upload). Rejects when the peer
   * cannot be reached before it answered (the caller answers 503); after that, a failure cuts the response.
   */
  async stream(req: Req, res: Res, base: string): Promise<void> {
    const ac = new AbortController();
    res.once('close', () => answerSent(res) || ac.abort());
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    const headers = peerHeaders(req.headers, req.socket?.remoteAddress, this.key.sign(method, path));
    const hasBody = method !== 'GET' && method !== 'HEAD';
    const up = await this.agent.request({ origin: base, path, method, headers, body: hasBody ? req : undefined, signal: ac.signal });
    res.writeHead(up.statusCode, answerHeaders(up.headers));
    // Server-sent events and other streams of unknown length: the client sees the head before the first chunk.
    if (up.headers['content-length'] === undefined) (res as { flushHeaders?: () => void }).flushHeaders?.();
    pump(up.body, res, RESPONSE_BUFFER);
    // A failure on either side ends both.
    up.body.on('error', () => res.destroy());
    res.once('close', () => up.body.destroy());
  }

  /**
   * Sends a request Fastify has parsed to the peer at `base`, its JSON body serialized again, and answers
   * `reply` with the peer's answer. Without x-request-id: this server claimed the id and keeps the answer.
   */
  async replay(req: FastifyRequest, reply: FastifyReply, base: string): Promise<PeerAnswer> {
    const path = req.url;
    const body = req.body === undefined || req.body === null ? undefined : JSON.stringify(req.body);
    const headers = peerHeaders(req.headers, req.ip, this.key.sign(req.method, path), ['content-length', 'x-request-id']);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const up = await this.agent.request({ origin: base, path, method: req.method as Dispatcher.HttpMethod, headers, body, signal: clientGone(reply) });
    return { status: up.statusCode, headers: answerHeaders(up.headers, ['content-length']), body: await up.body.text() };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
