import crypto from 'node:crypto';
import type http from 'node:http';
import type http2 from 'node:http2';
import { HOP_BY_HOP } from '../../../platform/http/hop-by-hop.js';

/** Where a tunnel request goes: the tunnel's key, the box port, and the path the box's server sees. */
export interface TunnelTarget {
  key: string;
  port: number;
  path: string;
}

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;

// `{port}-{key}.tunnel.<domain>`: what the SDK's getTunnelUrl builds; keys are 32 lower-case hex digits.
const HOST = /^(\d{1,5})-([0-9a-f]{32})\.tunnel\.([^:]+)(?::\d+)?$/;
// The path form for set-ups without wildcard DNS: `/tunnel/{key}/{port}/rest?query`.
const PATH = /^\/tunnel\/([0-9a-f]{32})\/(\d{1,5})(\/[^?]*)?(\?.*)?$/;

/** The request's host name as sent (HTTP/2 names it in `:authority`). */
export function authorityOf(req: AnyRequest): string {
  return String(req.headers[':authority'] ?? req.headers.host ?? '');
}

/**
 * The tunnel a request names, null when it is no tunnel request (the API's), or 'malformed' for a path under
 * /tunnel/ that names no key and port. With `domain` set, only host names under `tunnel.<domain>` are tunnels.
 */
export function tunnelTarget(req: AnyRequest, domain: string | null): TunnelTarget | 'malformed' | null {
  const url = req.url ?? '/';
  const host = HOST.exec(authorityOf(req).toLowerCase());
  if (host && (!domain || host[3] === domain)) return withPort(host[2]!, host[1]!, url);
  if (!url.startsWith('/tunnel/')) return null;
  const p = PATH.exec(url);
  return p ? withPort(p[1]!, p[2]!, `${p[3] ?? '/'}${p[4] ?? ''}`) : 'malformed';
}

function withPort(key: string, port: string, path: string): TunnelTarget | 'malformed' {
  const n = Number(port);
  return n >= 1 && n <= 65535 ? { key, port: n, path } : 'malformed';
}

/** Whether `X-Runloop-Tunnel-Authorization: Bearer <token>` carries the tunnel's token (constant time). */
export function authorized(req: AnyRequest, token: string): boolean {
  const sent = req.headers['x-runloop-tunnel-authorization'];
  if (typeof sent !== 'string') return false;
  const a = Buffer.from(sent.trim());
  const b = Buffer.from(`Bearer ${token}`);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

const HOP = new Set([...HOP_BY_HOP, 'http2-settings']);

/** The request headers the box's server gets: hop-by-hop, HTTP/2 pseudo-headers and the tunnel token stay here. */
export function forwardHeaders(req: AnyRequest): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k.startsWith(':') || HOP.has(k) || k === 'x-runloop-tunnel-authorization') continue;
    out[k] = v;
  }
  out.host = authorityOf(req);
  const remote = req.socket?.remoteAddress;
  if (remote) out['x-forwarded-for'] = req.headers['x-forwarded-for'] ? `${String(req.headers['x-forwarded-for'])}, ${remote}` : remote;
  out['x-forwarded-proto'] ??= 'http';
  out['x-forwarded-host'] ??= authorityOf(req);
  return out;
}

/** The box's response headers the client gets (no hop-by-hop ones, which HTTP/2 forbids). */
export function responseHeaders(headers: http.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
  return out;
}

/** The raw request head an upgrade (WebSocket) sends on to the box, token header left out. */
export function upgradeHead(req: http.IncomingMessage, path: string): string {
  const lines = [`${req.method} ${path} HTTP/1.1`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'x-runloop-tunnel-authorization') continue;
    lines.push(`${raw[i]}: ${raw[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}
