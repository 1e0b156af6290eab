import http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../../../lib/logger.js';
import { DomainError, ERRORS } from '../../../platform/errors.js';
import { TERMINAL, type Devbox } from '../../devboxes/index.js';
import { tunnelTarget, type TunnelTarget } from '../../tunnels/index.js';
import type { PtyClient, PtySession, PtySessions } from '../pty-sessions.js';
import { carriesToken, isTokenProtocol, PTY_PROTOCOL, type PtyTunnel, type PtyTunnels } from '../pty-tunnels.js';
import { connectSize, connectView, CONTROL_BODY_LIMIT, controlAction, sessionName } from './wire.js';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
type Handler = (req: Req, res: Res) => void;
type Upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** Largest WebSocket message a client may send (typed or pasted input). */
const MAX_MESSAGE = 1 << 20;

export interface PtyFrontDeps {
  tunnels: PtyTunnels;
  sessions: PtySessions;
  /** The box record by id alone (a tunnel request carries no account). */
  devboxById: (id: string) => Promise<Devbox | undefined>;
  /** DEVBOXD_TUNNEL_DOMAIN, or null: any `{port}-{key}.tunnel.*` host name. */
  domain: string | null;
  /** How often an attached client is pinged; a client that has not answered the last ping by the next is dropped. */
  pingMs: number;
  log: Logger;
}

/** A request on a PTY tunnel's host name (or path form): the tunnel, the path prefix and the PTY path. */
interface PtyTarget {
  tunnel: PtyTunnel;
  /** `/tunnel/{key}/{port}` for the path form, '' for the host name form: connect_url starts with it. */
  prefix: string;
  path: string;
  query: URLSearchParams;
}

/**
 * The PTY endpoints on a PTY tunnel's host name `{port}-{key}.tunnel.<domain>` (any port) or its path form
 * `/tunnel/{key}/{port}/…`, ahead of the tunnels and the API: `GET /pty/{name}` (connect),
 * `POST /pty/{name}/control`, and the WebSocket data plane `GET /pty/{name}/attach` (raw binary frames of
 * terminal bytes both ways). Every request carries `X-Runloop-Tunnel-Authorization: Bearer <auth_token>`; an
 * attach from a browser, whose WebSocket sends no such header, carries it as a subprotocol instead.
 */
export class PtyFront {
  /** Made, and ws loaded, at the first attach: most servers never serve a terminal, and every start paid for it. */
  private wss: Promise<WebSocketServer> | undefined;

  constructor(private readonly deps: PtyFrontDeps) {}

  /** Requests on a tunnel's host name or path go on to `next` unless the key is a PTY tunnel's (a lookup). */
  wrap(next: Handler): Handler {
    return (req, res) => {
      const t = tunnelTarget(req, this.deps.domain);
      if (t === null || t === 'malformed') return next(req, res);
      this.target(req, t)
        .then((pty) => (pty ? this.serve(req, res, pty) : next(req, res)))
        .catch((err) => reply(res, this.refusal(err)));
    };
  }

  upgrade(next: Upgrade): Upgrade {
    return (req, socket, head) => {
      const t = tunnelTarget(req, this.deps.domain);
      if (t === null || t === 'malformed') return next(req, socket, head);
      // The socket holds what the client sends next (no reader yet) while the key is looked up.
      socket.on('error', () => socket.destroy());
      this.target(req, t)
        .then((pty) => {
          if (!pty) return void next(req, socket, head);
          (socket as net.Socket).setNoDelay?.(true);
          return this.attach(req, socket, head, pty);
        })
        .catch((err) => rawRefuse(socket, this.refusal(err)));
      return true;
    };
  }

  private async target(req: Req, t: TunnelTarget): Promise<PtyTarget | null> {
    const tunnel = await this.deps.tunnels.byKey(t.key);
    if (!tunnel) return null;
    const url = req.url ?? '/';
    const q = t.path.indexOf('?');
    const path = q < 0 ? t.path : t.path.slice(0, q);
    const prefix = url.endsWith(t.path) ? url.slice(0, url.length - t.path.length) : '';
    return { tunnel, prefix, path, query: new URLSearchParams(q < 0 ? '' : t.path.slice(q + 1)) };
  }

  /** 401 without the token (an attach may carry it as a subprotocol); the box must be running (its tunnels go once it ended). */
  private async open(req: Req, t: PtyTarget, attach = false): Promise<Devbox> {
    if (!carriesToken(req, t.tunnel, { subprotocol: attach })) {
      throw ERRORS.unauthenticated(
        attach
          ? `a PTY attach needs X-Runloop-Tunnel-Authorization: Bearer <auth_token>, or the subprotocols ${PTY_PROTOCOL} and devboxd.tunnel-auth.<base64url(auth_token)>`
          : 'a PTY tunnel needs X-Runloop-Tunnel-Authorization: Bearer <auth_token>',
      );
    }
    const d = await this.deps.devboxById(t.tunnel.devboxId);
    if (!d || TERMINAL.has(d.status)) {
      await this.deps.tunnels.dropBox(t.tunnel.devboxId);
      throw new DomainError('not_found', 'no tunnel with this key');
    }
    if (d.status !== 'running') throw ERRORS.devboxNotRunning(d.id, d.status);
    return d;
  }

  private async serve(req: Req, res: Res, t: PtyTarget): Promise<void> {
    const d = await this.open(req, t);
    const m = /^\/pty\/([^/]+)(\/control|\/attach)?$/.exec(t.path);
    if (!m)
      throw new DomainError('not_found', `a PTY tunnel serves /pty/{session_name}, /pty/{session_name}/control and /pty/{session_name}/attach, not ${t.path}`);
    const name = sessionName(m[1]!);
    const { sessions } = this.deps;
    if (m[2] === undefined && req.method === 'GET') {
      const size = connectSize(t.query);
      const { session, created } = await sessions.connect(d, name, size);
      return send(res, 200, connectView(session, sessions.attached(session), created, `${t.prefix}/pty/${name}/attach`, sessions.idleTtlMs));
    }
    if (m[2] === '/control' && req.method === 'POST') {
      const action = controlAction(await readBody(req));
      const session = await sessions.find(d, name);
      if (!session) throw new DomainError('not_found', `PTY session ${name} not found`);
      if (action.action === 'resize') sessions.resize(session, action.cols, action.rows);
      else if (action.action === 'signal') sessions.signal(session, action.signal);
      else sessions.close(session);
      return send(res, 200, { session_name: name, status: action.action === 'close' ? 'closed' : 'ok' });
    }
    if (m[2] === '/attach') throw new DomainError('invalid_request', 'the PTY data plane is a WebSocket: GET with Upgrade: websocket');
    throw new DomainError('not_found', `${req.method} ${t.path} is not a PTY endpoint`);
  }

  /** The WebSocket data plane: refused at upgrade when another client is attached (409). */
  private async attach(req: http.IncomingMessage, socket: Duplex, head: Buffer, t: PtyTarget): Promise<void> {
    const d = await this.open(req, t, true);
    const m = /^\/pty\/([^/]+)\/attach$/.exec(t.path);
    if (!m) throw new DomainError('not_found', 'the PTY data plane is /pty/{session_name}/attach');
    const name = sessionName(m[1]!);
    const session = await this.deps.sessions.find(d, name);
    if (!session) throw new DomainError('not_found', `PTY session ${name} not found: connect (GET /pty/${name}) first`);
    if (this.deps.sessions.attached(session)) throw new DomainError('conflict', `another client is attached to PTY session ${name}`);
    if (session.exit) throw ERRORS.badState(`the shell of PTY session ${name} has exited`);
    this.wss ??= import('ws').then((mod) => {
      // The named export, or through `default` where a bundle's dynamic import gives the CommonJS object only.
      const WebSocketServer = mod.WebSocketServer ?? (mod.default as unknown as typeof mod).WebSocketServer;
      return new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE, perMessageDeflate: false, clientTracking: false, handleProtocols });
    });
    (await this.wss).handleUpgrade(req, socket, head, (ws) => this.bind(ws, session));
  }

  private bind(ws: WebSocket, session: PtySession): void {
    // Terminal reads come in pieces of a few KiB (the line discipline's buffer): those of one turn of the
    // event loop leave as one message, so a flood costs a frame per turn rather than per read.
    let queue: Buffer[] = [];
    let dones: (() => void)[] = [];
    const flush = () => {
      const [data, done] = [queue, dones];
      queue = [];
      dones = [];
      ws.send(data.length === 1 ? data[0]! : Buffer.concat(data), { binary: true }, () => done.forEach((f) => f()));
    };
    const client: PtyClient = {
      send: (data, done) => {
        if (queue.push(data) === 1) setImmediate(flush);
        dones.push(done);
      },
      pause: () => ws.pause(),
      resume: () => ws.resume(),
      end: (code, reason) => ws.close(code, reason),
      get open() {
        return ws.readyState === ws.OPEN;
      },
    };
    ws.on('error', () => ws.terminate());
    if (!this.deps.sessions.attach(session, client)) return ws.close(4409, 'another client is attached');
    ws.on('message', (data: Buffer) => this.deps.sessions.input(session, data));
    // A client whose network went away without a word (sleep, NAT timeout) would hold the session's only
    // attach slot, and keep the box busy, for as long as the kernel sees no error: a quiet shell sends nothing.
    let answered = true;
    ws.on('pong', () => (answered = true));
    const heartbeat = setInterval(() => {
      if (!answered) return ws.terminate();
      answered = false;
      ws.ping();
    }, this.deps.pingMs);
    heartbeat.unref();
    ws.on('close', () => {
      clearInterval(heartbeat);
      this.deps.sessions.detach(session, client);
    });
  }

  private refusal(err: unknown): DomainError {
    if (err instanceof DomainError) return err;
    this.deps.log.error({ err }, 'PTY request failed');
    return ERRORS.internal('the PTY request failed');
  }
}

/** devboxd.pty when offered, else the first offered one as before; never the one carrying the token. */
function handleProtocols(offered: Set<string>): string | false {
  if (offered.has(PTY_PROTOCOL)) return PTY_PROTOCOL;
  for (const p of offered) if (!isTokenProtocol(p)) return p;
  return false;
}

async function readBody(req: Req): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > CONTROL_BODY_LIMIT) throw ERRORS.tooLarge(`a control body is at most ${CONTROL_BODY_LIMIT} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

function send(res: Res, status: number, body: unknown): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function reply(res: Res, err: DomainError): void {
  send(res, err.status, { message: err.message, error: err.code });
}

function rawRefuse(socket: Duplex, err: DomainError): void {
  const body = JSON.stringify({ message: err.message, error: err.code });
  const text = http.STATUS_CODES[err.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${err.status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
