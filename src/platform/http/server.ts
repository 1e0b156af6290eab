import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { type ConnectionLimits, DEFAULT_CONNECTION_LIMITS, guardSession, type PendingConnection, PendingConnections } from './connection-limits.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'the request headers are larger than the server accepts (16 KiB)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request did not arrive in time'],
  ERR_HTTP_HEADERS_TIMEOUT: [408, 'Request Timeout', 'the request headers did not arrive in time'],
};

/**
 * HTTP/1.1 requests Node cannot parse never reach Fastify: answer them here, as JSON with a message like every
 * other 4xx, and close the connection (its framing is lost).
 */
function answerClientError(err: Error & { code?: string }, socket: net.Socket): void {
  if (!socket.writable || (socket as net.Socket & { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const [status, text, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Bad Request', `malformed HTTP request (${err.code ?? err.message})`];
  const body = JSON.stringify({ message, error: status === 431 ? 'headers_too_large' : status === 408 ? 'timeout' : 'invalid_request' });
  socket.write(
    `HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  // Closed once the answer is out, not once the client closes its end too (one that never does would keep it).
  socket.destroySoon();
}

/** A request's head without its upgrade headers, to parse again as a plain request. */
function plainHead(req: http.IncomingMessage): string {
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === 'upgrade' || name === 'connection' || name === 'http2-settings') continue;
    lines.push(`${raw[i]}: ${raw[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** How long an idle HTTP/1.1 keep-alive connection is kept. */
const KEEP_ALIVE_MS = 65_000;
/**
 * How long an HTTP/2 session without streams is kept. Longer than HTTP/1.1's: closing a session races the
 * requests a client is sending on it (refused, which a client may retry but one without retries sees as a
 * connection error), and the SDK keeps one session for a whole run of work with pauses of a minute and more.
 */
const H2_IDLE_MS = 600_000;

/** The first byte of a TLS connection (a handshake record); no HTTP/1.1 request or HTTP/2 preface starts so. */
const TLS_HANDSHAKE = 0x16;

/**
 * One cleartext port, two protocols: Node cannot serve HTTP/1.1 from an `http2.createServer` without TLS,
 * so a plain TCP server reads the first bytes of each connection, puts them back, and hands the socket to
 * an HTTP/2 server when they are the HTTP/2 preface (prior knowledge, how the Runloop SDK connects) or to an
 * HTTP/1.1 server otherwise. A connection that opens with a TLS handshake goes to `onTls` (SSH over TLS on the
 * API port). Used as Fastify's `serverFactory`.
 *
 * Until its first request's headers are in, a connection counts against `limits` (per source address and in
 * all) and must finish them within the headers timeout; once they are in, it is bounded no further here
 * (long-lived streams, long-polls and uploads have their own limits).
 */
export function dualProtocolServer(
  handler: Handler,
  onUpgrade?: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean,
  onTls?: (socket: net.Socket) => void,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): net.Server {
  // No request timeout (SSE and long-polls last), but the headers of every request on a connection must
  // arrive in time: Node's own check, which looks at each connection every `connectionsCheckingInterval`.
  const h1 = http.createServer(
    {
      keepAliveTimeout: KEEP_ALIVE_MS,
      requestTimeout: 0,
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.max(50, limits.headersTimeoutMs / 4)),
    },
    handler,
  );
  h1.on('clientError', answerClientError);
  const pending = new PendingConnections(limits);
  const pendingOf = new WeakMap<net.Socket, PendingConnection>();
  const headersIn = (socket: net.Socket) => {
    pendingOf.get(socket)?.release();
    pendingOf.delete(socket);
  };
  h1.prependListener('request', (req: http.IncomingMessage) => headersIn(req.socket));
  h1.prependListener('upgrade', (req: http.IncomingMessage) => headersIn(req.socket));
  // Node tracks an HTTP server's connections (for closeIdleConnections and the headers timeout) from its
  // 'listening' event; this one never listens itself (it is handed sockets), so it is told it does.
  h1.emit('listening');
  // HTTP/1.1 upgrades (WebSocket): tunnels splice theirs to a box. Any other (curl's `Upgrade: h2c`) is
  // served as the plain request it also is, as Node does when no 'upgrade' listener exists.
  if (onUpgrade) {
    h1.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      if (onUpgrade(req, socket, head)) return;
      socket.unshift(Buffer.concat([Buffer.from(plainHead(req)), head]));
      h1.emit('connection', socket);
    });
  }
  const h2 = http2.createServer(
    { settings: { maxConcurrentStreams: 1000 }, maxSessionMemory: 64 },
    handler as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  );
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const sessionOf = new WeakMap<net.Socket, http2.ServerHttp2Session>();
  const servedByH1 = new WeakSet<net.Socket>();
  let handing: { socket: net.Socket; pending: PendingConnection } | undefined;
  h2.on('session', (s) => {
    sessions.add(s);
    // 'session' is emitted within h2.emit('connection'): `handing` is this session's socket.
    const conn = handing;
    handing = undefined;
    if (conn) {
      sessionOf.set(conn.socket, s);
      s.once('stream', () => conn.pending.release());
      // Every session that ends takes its socket with it (no CLOSE-WAIT left behind).
      s.once('close', () => conn.socket.destroy());
    }
    s.on('error', () => s.destroy());
    s.once('close', () => sessions.delete(s));
    guardSession(s, limits, H2_IDLE_MS);
  });

  const server = net.createServer((socket) => {
    const admitted = pending.admit(socket, () => headersLate(socket));
    if (!admitted) {
      socket.destroy();
      return;
    }
    pendingOf.set(socket, admitted);
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      admitted.release();
    });
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      if (onTls && seen[0] === TLS_HANDSHAKE) {
        socket.off('data', onData);
        socket.pause();
        socket.unshift(seen);
        admitted.release();
        onTls(socket);
        return;
      }
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2 && seen.length < PREFACE.length) return; // need more bytes to decide
      socket.off('data', onData);
      socket.pause();
      socket.unshift(seen);
      if (isH2) {
        handing = { socket, pending: admitted };
        h2.emit('connection', socket);
        handing = undefined;
      } else {
        servedByH1.add(socket);
        h1.emit('connection', socket);
        socket.resume();
      }
    };
    socket.on('data', onData);
    socket.on('error', () => socket.destroy());
  });

  /** The headers deadline passed: a 408 on HTTP/1.1, the session closed on HTTP/2, else the socket closed. */
  function headersLate(socket: net.Socket): void {
    if (socket.destroyed) return;
    const session = sessionOf.get(socket);
    if (session) session.destroy();
    else if (servedByH1.has(socket)) answerClientError(Object.assign(new Error('headers timeout'), { code: 'ERR_HTTP_HEADERS_TIMEOUT' }), socket);
    else socket.destroy();
  }

  // Graceful close: stop accepting, let HTTP/2 sessions finish with GOAWAY, drop idle HTTP/1.1 sockets,
  // and cut whatever still hangs on (long-polls, SSE) after a grace period.
  const netClose = server.close.bind(server);
  server.close = ((cb?: (err?: Error) => void) => {
    netClose(cb);
    for (const s of sessions) s.close();
    h1.close(); // drops idle keep-alive sockets and stops the connection checks; busy ones finish
    const timer = setTimeout(() => {
      for (const s of sockets) s.destroy();
    }, 2000);
    timer.unref();
    return server;
  }) as typeof server.close;
  return server;
}
