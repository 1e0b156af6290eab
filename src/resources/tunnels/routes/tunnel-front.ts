import http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../../lib/logger.js';
import { DomainError } from '../../../platform/errors.js';
import { pump } from '../../../platform/http/hop-by-hop.js';
import { answerSent } from '../../../platform/http/request-signal.js';
import type { DevboxService } from '../../devboxes/index.js';
import type { Lifecycle } from '../../devboxes/index.js';
import type { Devbox } from '../../devboxes/index.js';
import type { TunnelService } from '../tunnel-service.js';
import type { Tunnel } from '../types.js';
import { nothingAnswers, PortGate } from './port-gate.js';
import { relayRawBody } from './raw-body.js';
import { authorized, forwardHeaders, responseHeaders, tunnelTarget, upgradeHead, type TunnelTarget } from './target.js';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
/** Bytes of a box's response held for a slow client before the box's socket is paused. */
const RESPONSE_BUFFER = 256 * 1024;

/** How long a request that woke a box waits for its port to listen. */
const PORT_WAIT_MS = 15_000;

type Handler = (req: Req, res: Res) => void;

/** A refusal: status, message, and the code clients branch on. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

export interface TunnelFrontDeps {
  tunnels: TunnelService;
  devboxes: DevboxService;
  lifecycle: Lifecycle;
  /** The box record by id alone (a tunnel request carries no account). */
  devboxById: (id: string) => Promise<Devbox | undefined>;
  /** Resumes a suspended box (SuspendService.resume). */
  resume: (accountId: string, id: string) => Promise<unknown>;
  /** The box's address on its veth link, or null without networking. */
  address: (id: string) => Promise<string | null>;
  /** DEVBOXD_TUNNEL_DOMAIN, or null: any `{port}-{key}.tunnel.*` host name is a tunnel's. */
  domain: string | null;
  /** How long a request to a suspended box with wake_on_http waits for it to run. */
  wakeTimeoutMs: number;
  log: Logger;
}

/**
 * Tunnels on the main port, ahead of Fastify: a request whose host name (or `/tunnel/…` path) names a tunnel
 * goes, streamed both ways, to that port of the box at its veth address; upgrades (WebSocket) are spliced as
 * raw TCP after the head. Every other request goes to the API untouched.
 */
export class TunnelFront {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 32 });
  /** Box addresses, valid while the box keeps the sandbox they were read for (a resume makes a new one). */
  private readonly addresses = new Map<string, { sandbox: unknown; address: string }>();

  private readonly ports: PortGate;

  constructor(private readonly deps: TunnelFrontDeps) {
    this.ports = new PortGate(deps.devboxById);
  }

  /** Wraps the API's request handler: tunnel requests never reach it. */
  wrap(api: Handler): Handler {
    return (req, res) => {
      const target = tunnelTarget(req, this.deps.domain);
      if (target === null) return api(req, res);
      void this.serve(req, res, target);
    };
  }

  /** The HTTP/1.1 server's 'upgrade' event: takes a tunnel's (WebSocket); false for the API's requests. */
  readonly upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const target = tunnelTarget(req, this.deps.domain);
    if (target === null) return false;
    socket.on('error', () => socket.destroy());
    (socket as net.Socket).setNoDelay?.(true);
    if (target === 'malformed') rawRefuse(socket, new Refusal(404, 'a tunnel path is /tunnel/{tunnel_key}/{port}/…', 'not_found'));
    else void this.splice(req, socket, head, target);
    return true;
  };

  /**
   * A box's request to a tunnel through its box services (`http://127.0.0.1:1023/tunnel/{key}/{port}/…`), which
   * the box's network policy opens with `allow_devbox_to_devbox`: only tunnels of boxes of the caller's own
   * account answer; any other key gets the 404 an unknown key gets. HTTP and SSE (upgrades do not pass the
   * box services).
   */
  readonly fromBox = async (req: Req, res: Res, boxId: string): Promise<void> => {
    const target = tunnelTarget(req, this.deps.domain);
    const unknown = new Refusal(404, 'no tunnel with this key', 'not_found');
    if (target === null || target === 'malformed') return reply(res, new Refusal(404, 'a tunnel path is /tunnel/{tunnel_key}/{port}/…', 'not_found'));
    const tunnel = await this.deps.tunnels.byKey(target.key);
    const [caller, owner] = await Promise.all([this.deps.devboxById(boxId), tunnel && this.deps.devboxById(tunnel.devboxId)]);
    if (!caller || !owner || owner.accountId !== caller.accountId) return reply(res, unknown);
    return this.serve(req, res, target);
  };

  close(): void {
    this.agent.destroy();
  }

  private async serve(req: Req, res: Res, target: TunnelTarget | 'malformed'): Promise<void> {
    let release = () => {};
    try {
      if (target === 'malformed') throw new Refusal(404, 'a tunnel path is /tunnel/{tunnel_key}/{port}/…', 'not_found');
      const { tunnel, address } = await this.open(req, target);
      release = this.activity(tunnel);
      // Heads and bodies are separate writes here: with Nagle on, each second write would wait for the
      // peer's delayed ACK (~40 ms a request).
      req.socket?.setNoDelay?.(true);
      const up = http.request({ host: address, port: target.port, method: req.method, path: target.path, headers: forwardHeaders(req), agent: this.agent });
      up.on('socket', (s) => s.setNoDelay(true));
      up.on('response', (ur) => {
        res.writeHead(ur.statusCode ?? 502, responseHeaders(ur.headers));
        // Server-sent events and other streams of unknown length: the client sees the head before the first chunk.
        if (ur.headers['content-length'] === undefined) (res as { flushHeaders?: () => void }).flushHeaders?.();
        if (!relayRawBody(ur, res, req.method, RESPONSE_BUFFER)) {
          pump(ur, res, RESPONSE_BUFFER);
          ur.on('error', () => res.destroy());
        }
      });
      up.on('error', (err) => {
        if (res.headersSent) return void res.destroy();
        reply(res, new Refusal(502, nothingAnswers(target.port, tunnel.devboxId, (err as NodeJS.ErrnoException).code ?? err.message), 'bad_gateway'));
      });
      res.on('close', () => {
        release();
        if (!answerSent(res)) up.destroy();
      });
      req.on('error', () => up.destroy());
      req.pipe(up);
    } catch (err) {
      release();
      reply(res, this.refusal(err));
    }
  }

  private async splice(req: http.IncomingMessage, socket: Duplex, head: Buffer, target: TunnelTarget): Promise<void> {
    let release = () => {};
    try {
      const { tunnel, address } = await this.open(req, target);
      release = this.activity(tunnel);
      const up = net.connect({ host: address, port: target.port });
      let connected = false;
      up.once('connect', () => {
        connected = true;
        up.setNoDelay(true);
        up.write(upgradeHead(req, target.path));
        if (head.length) up.write(head);
        socket.pipe(up).pipe(socket);
      });
      up.on('error', (err) => {
        if (!connected)
          rawRefuse(socket, new Refusal(502, nothingAnswers(target.port, tunnel.devboxId, (err as NodeJS.ErrnoException).code ?? err.message), 'bad_gateway'));
        else socket.destroy();
      });
      up.on('close', () => socket.destroy());
      socket.on('close', () => {
        up.destroy();
        release();
      });
    } catch (err) {
      release();
      rawRefuse(socket, this.refusal(err));
    }
  }

  /** The tunnel and the box address for a request: 404 unknown key, 401 without the token, 503 box not running. */
  private async open(req: Req, target: TunnelTarget): Promise<{ tunnel: Tunnel; address: string }> {
    const tunnel = await this.deps.tunnels.byKey(target.key);
    if (!tunnel) throw new Refusal(404, 'no tunnel with this key', 'not_found');
    if (tunnel.authToken && !authorized(req, tunnel.authToken)) {
      throw new Refusal(401, 'this tunnel needs X-Runloop-Tunnel-Authorization: Bearer <auth_token>', 'unauthenticated');
    }
    const id = tunnel.devboxId;
    // Before any wake: a port outside the box's available_ports neither resumes it nor tells it apart.
    if (!(await this.ports.allows(id, target.port))) throw new Refusal(502, nothingAnswers(target.port, id, 'ECONNREFUSED'), 'bad_gateway');
    const woke = !this.deps.lifecycle.active.has(id) && (await this.wake(tunnel));
    const address = await this.addressOf(id);
    // A box just resumed starts its servers again: the request waits (bounded) for the port to listen.
    if (woke) await listening(address, target.port, Date.now() + PORT_WAIT_MS);
    return { tunnel, address };
  }

  private async addressOf(id: string): Promise<string> {
    const sandbox = this.deps.lifecycle.active.get(id)?.sandbox;
    const known = this.addresses.get(id);
    if (known && known.sandbox === sandbox) return known.address;
    const address = await this.deps.address(id);
    if (!address) throw new Refusal(503, `devbox ${id} has no network link (DEVBOXD_NETWORK=off)`, 'tunnel_unavailable');
    if (this.addresses.size > 10_000) this.addresses.clear();
    this.addresses.set(id, { sandbox, address });
    return address;
  }

  /** A box not running: resumed when the tunnel (or the box's resume trigger) says so, else a 503. True once it woke. */
  private async wake(tunnel: Tunnel): Promise<boolean> {
    const d = await this.deps.devboxById(tunnel.devboxId);
    if (!d) throw new Refusal(404, 'no tunnel with this key', 'not_found');
    if (d.status === 'running') return false;
    const trigger = (d.launchParameters as { lifecycle?: { resume_triggers?: { http?: boolean | null } | null } | null }).lifecycle?.resume_triggers?.http;
    const wakes = typeof trigger === 'boolean' ? trigger : tunnel.wakeOnHttp;
    if (!wakes || (d.status !== 'suspended' && d.status !== 'resuming' && d.status !== 'suspending')) {
      throw new Refusal(503, `devbox ${d.id} is ${d.status}, not running`, 'tunnel_unavailable');
    }
    if (d.status === 'suspending') {
      await this.deps.devboxes.waitForStatus(d.accountId, d.id, ['suspended', 'running', 'failure', 'shutdown'], this.deps.wakeTimeoutMs);
    }
    await this.deps.resume(d.accountId, d.id).catch((err) => {
      // A racing request resumed it first.
      if (!(err instanceof DomainError && err.code === 'devbox_not_suspended')) throw err;
    });
    const now = await this.deps.devboxes.waitForStatus(d.accountId, d.id, ['running', 'failure', 'shutdown'], this.deps.wakeTimeoutMs);
    if (now?.status !== 'running') throw new Refusal(503, `devbox ${d.id} did not resume in time (${now?.status ?? 'still resuming'})`, 'tunnel_unavailable');
    return true;
  }

  /** With http_keep_alive, an open request or socket keeps the box from going idle; the release runs once. */
  private activity(tunnel: Tunnel): () => void {
    if (!tunnel.httpKeepAlive) return () => {};
    const id = tunnel.devboxId;
    this.deps.devboxes.busy(id, 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.deps.devboxes.busy(id, -1);
    };
  }

  private refusal(err: unknown): Refusal {
    if (err instanceof Refusal) return err;
    this.deps.log.error({ err }, 'tunnel request failed');
    return new Refusal(502, 'the tunnel could not reach the devbox', 'bad_gateway');
  }
}

/** Resolves once something accepts connections on the port, or at the deadline (the request then gets a 502). */
async function listening(host: string, port: number, untilMs: number): Promise<void> {
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host, port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (open || Date.now() >= untilMs) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function reply(res: Res, r: Refusal): void {
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify({ message: r.message, error: r.code });
  res.writeHead(r.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function rawRefuse(socket: Duplex, r: Refusal): void {
  const body = JSON.stringify({ message: r.message, error: r.code });
  const text = http.STATUS_CODES[r.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${r.status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
