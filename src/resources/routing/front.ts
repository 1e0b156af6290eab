import type http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';
import type { Logger } from '../../lib/logger.js';
import { ERRORS } from '../../platform/errors.js';
import type { Forwarder, FrontHandler, FrontTls, FrontUpgrade } from '../../platform/http/fronts.js';
import { markFromPeer, PEER_HEADER, type PeerKey } from '../../platform/http/peers.js';
import { devboxOfServerName } from '../ssh/index.js';
import { tunnelTarget } from '../tunnels/index.js';
import type { NodeDirectory } from './directory.js';
import type { PeerAnswer, PeerClient } from './proxy.js';
import { HERE, type Route, type Router } from './router.js';
import { peekFirstRecord, serverNameOf } from './sni.js';
import { connectPeer, handTls, rawRefuse, splice, TLS_PATH, TLS_PROTOCOL, upgradeHead } from './splice.js';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** `/v1/devboxes/{id}` and everything under it; ids are `dbx_` and lower-case letters and digits. */
const BOX_PATH = /^\/v1\/devboxes\/(dbx_[0-9a-z]{1,64})(\/[^?]*)?(?:\?.*)?$/;
/** How long a TLS client gets to send its first record (its ClientHello) before the connection is dropped. */
const HELLO_MS = 10_000;

/** What a request names: a box (by path), a tunnel (by host name or /tunnel/ path), or nothing to route. */
type Subject = { box: string } | { tunnel: string };

export interface RoutingFrontDeps {
  router: Router;
  directory: NodeDirectory;
  /** The cluster's peer key and a client of peers; undefined without DEVBOXD_CLUSTER_TOKEN (nothing is forwarded). */
  peers: { key: PeerKey; client: PeerClient } | undefined;
  /** DEVBOXD_CLUSTER_CA, for peers on https://. */
  ca: string | undefined;
  tunnelDomain: string | null;
  sshDomain: string | null;
  log: Logger;
}

/**
 * The routing front, outermost on the API port: a request for a box whose node is another one goes to that
 * node's API server (HTTP streamed both ways, WebSocket upgrades and SSH-over-TLS connections spliced), the
 * client's Authorization with it; the target authenticates as usual. A request another server forwarded
 * (its peer signature verifies) is served here and never forwarded again. A box whose node cannot be reached
 * answers 503 naming the node. Creates, resumes and `GET /v1/devboxes/{id}` are their handlers' to forward
 * (`forward`, for an ElsewhereError).
 */
export class RoutingFront {
  private localTls: FrontTls = (socket) => socket.destroy();

  constructor(private readonly deps: RoutingFrontDeps) {}

  wrap(next: FrontHandler): FrontHandler {
    return (req, res) => {
      const signed = req.headers[PEER_HEADER];
      if (signed !== undefined) return this.verified(req, String(signed)) ? next(req, res) : refuse(res, 403, NOT_A_PEER, 'forbidden');
      const subject = subjectOf(req, this.deps.tunnelDomain);
      // A box with its sandbox here (the common case), or one that ended, is served without a read or a turn of
      // the event loop.
      if (!subject || ('box' in subject && this.deps.router.runsHere(subject.box))) return next(req, res);
      this.route(subject)
        .then(async (route) => {
          if ('here' in route) return next(req, res);
          if ('why' in route) return refuse(res, 503, unreachable(subject, route.node, route.why), 'unavailable');
          await this.stream(req, res, subject, route);
        })
        .catch((err) => {
          this.deps.log.error({ err }, 'routing a request failed');
          refuse(res, 500, 'internal server error', 'internal');
        });
    };
  }

  /** Tunnels' upgrades (WebSocket, PTY attach) go to their box's node; a peer's SSH-over-TLS hand-over is taken. */
  upgrade(next: FrontUpgrade): FrontUpgrade {
    return (req, socket, head) => {
      const signed = req.headers[PEER_HEADER];
      if (signed !== undefined) {
        if (!this.verified(req, String(signed))) rawRefuse(socket, 403, NOT_A_PEER, 'forbidden');
        else if (req.url === TLS_PATH && String(req.headers.upgrade).toLowerCase() === TLS_PROTOCOL) this.takeTls(socket as net.Socket, head);
        else return next(req, socket, head);
        return true;
      }
      // Upgrades on API paths (none is a WebSocket) are served as the plain requests they also are: `wrap` routes them.
      const subject = subjectOf(req, this.deps.tunnelDomain);
      if (!subject || 'box' in subject) return next(req, socket, head);
      socket.on('error', () => socket.destroy());
      this.route(subject)
        .then((route) => {
          if ('here' in route) return void next(req, socket, head);
          if ('why' in route) return rawRefuse(socket, 503, unreachable(subject, route.node, route.why), 'unavailable');
          const { key } = this.deps.peers!;
          connectPeer(
            route.url,
            this.deps.ca,
            (peer) => {
              peer.write(upgradeHead(req, key.sign(req.method ?? 'GET', req.url ?? '/')));
              if (head.length) peer.write(head);
              splice(socket, peer);
            },
            (why) => rawRefuse(socket, 503, this.noAnswer(route, why), 'unavailable'),
          );
        })
        .catch((err) => {
          this.deps.log.error({ err }, 'routing an upgrade failed');
          socket.destroy();
        });
      return true;
    };
  }

  /** SSH over TLS on the API port: the box the server name (SNI) names is logged into on its node. */
  tls(next: FrontTls): FrontTls {
    this.localTls = next;
    return (socket) => {
      socket.on('error', () => socket.destroy());
      void this.routeTls(socket, next).catch((err) => {
        this.deps.log.error({ err }, 'routing a TLS connection failed');
        socket.destroy();
      });
    };
  }

  /**
   * A request a handler found belongs on another node (ElsewhereError): replayed there, its answer this
   * request's. A node out of reach: the handler's own answer when it has one (a read), else 503 naming it.
   */
  readonly forward: Forwarder = async (req, reply, to) => {
    const reach = await this.deps.directory.reach(to.node);
    if ('why' in reach || !this.deps.peers) {
      if (to.here) return reply.send(await to.here());
      throw ERRORS.unavailable(`this request goes to node ${to.node}, which this server cannot reach now: ${'why' in reach ? reach.why : NO_TOKEN}`);
    }
    const route = { node: to.node, url: reach.url };
    let answer: PeerAnswer;
    try {
      answer = await this.deps.peers.client.replay(req, reply, route.url);
    } catch (err) {
      const message = this.noAnswer(route, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
      if (to.here) return reply.send(await to.here());
      throw ERRORS.unavailable(message);
    }
    this.deps.log.debug({ node: to.node, status: answer.status }, 'request forwarded to the node it belongs on');
    return reply.status(answer.status).headers(answer.headers).send(answer.body);
  };

  close(): Promise<void> | undefined {
    return this.deps.peers?.client.close();
  }

  /** Where the subject's requests go; a node this server cannot sign for (no token) counts as out of reach. */
  private async route(subject: Subject): Promise<Route> {
    const route = await ('box' in subject ? this.deps.router.forBox(subject.box) : this.deps.router.forTunnel(subject.tunnel));
    return 'url' in route && !this.deps.peers ? { node: route.node, why: NO_TOKEN } : route;
  }

  private async stream(req: Req, res: Res, subject: Subject, route: { node: string; url: string }): Promise<void> {
    this.deps.log.debug({ node: route.node, ...subject }, 'forwarding to the node of the devbox');
    await this.deps.peers!.client.stream(req, res, route.url).catch((err: NodeJS.ErrnoException) => {
      if (res.headersSent) return void res.destroy();
      refuse(res, 503, this.noAnswer(route, err.code ?? err.message), 'unavailable');
    });
  }

  private async routeTls(socket: net.Socket, next: FrontTls): Promise<void> {
    const hello = await peekFirstRecord(socket, HELLO_MS);
    if (!hello) return void socket.destroy();
    const id = devboxOfServerName(serverNameOf(hello), this.deps.sshDomain);
    const route = id ? await this.deps.router.forBox(id) : HERE;
    // A box here, unknown, or on a node out of reach: the SSH front here answers (its banner says why not).
    if (!('url' in route) || !this.deps.peers) return next(socket);
    handTls(socket, route.url, this.deps.ca, this.deps.peers.key.sign('GET', TLS_PATH), (why) => {
      this.deps.log.warn({ node: route.node, why }, 'an SSH connection could not be handed to the node of its devbox');
      this.deps.directory.forget();
      socket.destroy();
    });
  }

  /** A peer's SSH-over-TLS connection: switched, then served as a TLS connection to this API port. */
  private takeTls(socket: net.Socket, head: Buffer): void {
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: ${TLS_PROTOCOL}\r\n\r\n`);
    socket.pause();
    if (head.length) socket.unshift(head);
    this.localTls(socket);
  }

  private verified(req: Req, signed: string): boolean {
    if (!this.deps.peers?.key.verify(signed, req.method ?? 'GET', req.url ?? '/')) return false;
    markFromPeer(req);
    return true;
  }

  private noAnswer(route: { node: string; url: string }, why: string): string {
    this.deps.directory.forget();
    return `the API server of node ${route.node} (${route.url}) did not answer (${why}); retry later`;
  }
}

const NOT_A_PEER = `${PEER_HEADER} does not verify: the API servers of a cluster need the same DEVBOXD_CLUSTER_TOKEN, and clocks within 5 minutes`;
const NO_TOKEN = 'this server forwards nothing, it has no DEVBOXD_CLUSTER_TOKEN';

function unreachable(subject: Subject, node: string, why: string): string {
  const what = 'box' in subject ? `devbox ${subject.box}` : "this tunnel's devbox";
  return `${what} is on node ${node}, which this server cannot reach now: ${why}; retry later`;
}

function subjectOf(req: Req, tunnelDomain: string | null): Subject | undefined {
  const tunnel = tunnelTarget(req, tunnelDomain);
  if (tunnel !== null) return tunnel === 'malformed' ? undefined : { tunnel: tunnel.key };
  const url = req.url ?? '/';
  if (!url.startsWith('/v1/devboxes/dbx_')) return undefined;
  const m = BOX_PATH.exec(url);
  if (!m) return undefined;
  // Decided by their handlers: a resume is placed (the box may move to another node), and a read of the box
  // forwards once it has read the record, which says where the box is (no read of its own here).
  if (m[2] === '/resume' || (m[2] === undefined && req.method === 'GET')) return undefined;
  return { box: m[1]! };
}

function refuse(res: Res, status: number, message: string, code: string): void {
  if (res.headersSent || res.writableEnded || (res as { destroyed?: boolean }).destroyed) return void res.destroy();
  const body = JSON.stringify({ message, error: code });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
