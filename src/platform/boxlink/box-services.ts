/**
 * Box services: the HTTP endpoints a box reaches from inside, at http://127.0.0.1:<port>/ (see
 * `boxServicesUrl`), and nothing else of the host. Other modules (the MCP hub, the agent gateway) plug
 * handlers in with `route()`.
 *
 * Each linked box has a unix socket of its own on the host (`<socket dir>/<box id>.sock`, 0600 in a 0700
 * root directory); the runtime relays connections made to the port inside the box to that socket and to no
 * other. Its connections are handed to one `http.Server` that never listens itself, tagged with the box id:
 * a handler learns which box calls from the socket the connection arrived on, never from anything the box
 * sends.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '../../lib/logger.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import { TokenBucket, BodyBudget, type BodyBudgetOptions } from './body-budget.js';

/** Handles a request from a box; `boxId` is the devbox whose link the connection came through. */
export type BoxServiceHandler = (req: IncomingMessage, res: ServerResponse, boxId: string) => void | Promise<void>;

export interface BoxServicesOptions {
  runtime: RuntimeDriver;
  /** Data dir: the sockets live in `<data>/run/boxsvc/` unless `socketDir` says where. */
  dataDir: string;
  /**
   * A directory made for them (by the supervisor of a split server: one the node agent reaches by the same
   * path, this process's own); its contents are this server's, the directory itself is not replaced.
   */
  socketDir?: string;
  /** The port inside each box (DEVBOXD_BOX_SERVICES_PORT). */
  port: number;
  log: Logger;
  /** A connection must send a request's headers within this long (default 10 s), else it gets 408 and is closed. */
  headersTimeoutMs?: number;
  /** What request bodies may cost per box (see body-budget.ts). */
  bodyBudget?: BodyBudgetOptions;
  /** New connections a box may open per second, after a burst of twice that (default 200). */
  connectionsPerSecond?: number;
  /** Whether the box may use the service under `prefix` (its network policy); refused requests get 403. */
  allows?: (boxId: string, prefix: string) => boolean;
}

/** Connections one box holds on the server side at once (the runtime's relay caps them lower already). */
const MAX_CONNECTIONS_PER_BOX = 128;
/** Longest unix socket path (sun_path holds 108 bytes with the NUL). */
const SUN_PATH_MAX = 107;

interface Link {
  server: NetServer;
  path: string;
  sockets: Set<Socket>;
  /** Connections the box may still open (each is accepted and parsed on the server's main thread). */
  opens: TokenBucket;
}

export class BoxServices {
  private readonly http: HttpServer;
  private readonly routes: { prefix: string; handler: BoxServiceHandler; anyPolicy: boolean }[] = [];
  private allows: ((boxId: string, prefix: string) => boolean) | undefined;
  private readonly owners = new WeakMap<Socket, string>();
  private readonly links = new Map<string, Link>();
  /** Set once the server stops serving boxes: a boot finishing later links nothing. */
  private closed = false;
  private readonly budget: BodyBudget;
  readonly socketDir: string;

  constructor(private readonly opts: BoxServicesOptions) {
    this.allows = opts.allows;
    const headersTimeout = opts.headersTimeoutMs ?? 10_000;
    this.http = createHttpServer(
      {
        headersTimeout,
        // A whole request (a gateway upload included) must arrive within five minutes.
        requestTimeout: Math.max(300_000, headersTimeout),
        keepAliveTimeout: 5_000,
        connectionsCheckingInterval: Math.min(1_000, headersTimeout),
      },
      (req, res) => this.handle(req, res),
    );
    // A box that half-closes after its request still gets the answer of a handler that answers later (by
    // default the server aborts the request and ends the socket at the box's FIN).
    (this.http as HttpServer & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    this.budget = new BodyBudget(opts.bodyBudget);
    // The timeouts above are enforced by a timer the server starts on 'listening'; this server never listens
    // (connections are handed to it), so it is told it does.
    this.http.emit('listening');
    const dir = join(opts.dataDir, 'run', 'boxsvc');
    // Box ids are 25 characters; a data dir too deep for a socket path under it gets a directory in /run.
    this.socketDir =
      opts.socketDir ??
      (Buffer.byteLength(join(dir, `${'x'.repeat(40)}.sock`)) <= SUN_PATH_MAX
        ? dir
        : join('/run/devboxd', `boxsvc-${createHash('sha256').update(opts.dataDir).digest('hex').slice(0, 16)}`));
    this.route('/_whoami', (_req, res, boxId) => sendJson(res, 200, { devbox_id: boxId }));
  }

  /** Starts with no links: sockets a previous server left behind are removed. */
  start(): void {
    if (this.opts.socketDir) {
      mkdirSync(this.socketDir, { recursive: true, mode: 0o700 });
      for (const name of readdirSync(this.socketDir)) rmSync(join(this.socketDir, name), { recursive: true, force: true });
    } else {
      rmSync(this.socketDir, { recursive: true, force: true });
      mkdirSync(this.socketDir, { recursive: true, mode: 0o700 });
    }
    chmodSync(this.socketDir, 0o700);
  }

  /**
   * Serves requests under `prefix` (`/mcp` takes `/mcp`, `/mcp/...` and `/mcp?...`); the longest matching
   * prefix wins. Anything no route takes is a 404 with a JSON message.
   */
  route(prefix: string, handler: BoxServiceHandler, opts: { anyPolicy?: boolean } = {}): void {
    if (!/^\/[^?#]*$/.test(prefix) || (prefix.length > 1 && prefix.endsWith('/'))) throw new Error(`bad box service prefix ${prefix}`);
    if (this.routes.some((r) => r.prefix === prefix)) throw new Error(`box service prefix ${prefix} is taken`);
    this.routes.push({ prefix, handler, anyPolicy: opts.anyPolicy ?? false });
    this.routes.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /**
   * Whether a box may use the service under a prefix (its network policy: the module that owns policies
   * sets it once); routes added with `anyPolicy` are served whatever it says.
   */
  policy(allows: (boxId: string, prefix: string) => boolean): void {
    if (this.allows) throw new Error('the box services have a policy already');
    this.allows = allows;
  }

  /** Ids of the boxes linked now. */
  linked(): string[] {
    return [...this.links.keys()];
  }

  socketPath(boxId: string): string {
    return join(this.socketDir, `${boxId}.sock`);
  }

  /** Gives a running box its link (replacing an earlier one): a box adopted after a restart. */
  async link(boxId: string): Promise<void> {
    const target = await this.open(boxId);
    const link = this.links.get(boxId);
    if (!target || !link) return;
    try {
      await this.opts.runtime.linkServices(boxId, target.port, target.socketPath);
    } catch (err) {
      if (this.links.get(boxId) === link) {
        this.links.delete(boxId);
        closeLink(link);
      }
      throw err;
    }
    // Unlinked while the runtime linked it: the runtime's link goes too, unless a newer link took over.
    if (!this.links.has(boxId)) await this.opts.runtime.unlinkServices(boxId).catch(() => undefined);
  }

  /**
   * Makes a box's socket (replacing an earlier link) and answers what the runtime links the box to: a boot
   * passes it to the sandbox's create (SandboxSpec.services), `link` to linkServices. Undefined when there
   * is nothing to link: the server began to stop, or the box was unlinked (it ended) meanwhile.
   */
  async open(boxId: string): Promise<{ port: number; socketPath: string } | undefined> {
    await this.unlink(boxId);
    // A boot that ends after the server began to stop links nothing: no one would close the socket.
    if (this.closed) return undefined;
    const rate = this.opts.connectionsPerSecond ?? 200;
    const link: Link = {
      server: createNetServer({ allowHalfOpen: true }),
      path: this.socketPath(boxId),
      sockets: new Set(),
      opens: new TokenBucket(rate, 2 * rate),
    };
    link.server.maxConnections = MAX_CONNECTIONS_PER_BOX;
    link.server.on('connection', (socket) => {
      // A box that opens connections faster than that gets them closed unread: a loop of connections that
      // each send a request would otherwise keep the main thread parsing for it.
      if (!link.opens.tryTake(1)) return void socket.destroy();
      this.owners.set(socket, boxId);
      link.sockets.add(socket);
      socket.on('close', () => link.sockets.delete(socket));
      this.http.emit('connection', socket);
    });
    this.links.set(boxId, link);
    rmSync(link.path, { force: true });
    try {
      await new Promise<void>((resolve, reject) => {
        link.server.once('error', reject);
        link.server.listen(link.path, () => {
          link.server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      if (this.links.get(boxId) === link) this.links.delete(boxId);
      closeLink(link);
      throw err;
    }
    // Accept failures (out of fds) cost the connection, never the server.
    link.server.on('error', (err) => this.opts.log.warn({ err, devbox: boxId }, 'box services socket error'));
    chmodSync(link.path, 0o600);
    // Unlinked (the box ended) while the socket was being made: it goes again. (A box is linked by its boot
    // or its adoption, never twice at once, so no newer link of it shares this path.)
    if (this.closed || this.links.get(boxId) !== link) {
      closeLink(link);
      return undefined;
    }
    return { port: this.opts.port, socketPath: link.path };
  }

  /** Drops a box's link, its socket and its connections. Idempotent. */
  async unlink(boxId: string): Promise<void> {
    const link = this.links.get(boxId);
    if (!link) return;
    this.links.delete(boxId);
    this.budget.drop(boxId);
    closeLink(link);
    await this.opts.runtime.unlinkServices(boxId).catch((err) => this.opts.log.warn({ err, devbox: boxId }, 'box services unlink failed'));
  }

  /** Stops serving boxes (the server is stopping; the runtime's links end with it). */
  async close(): Promise<void> {
    this.closed = true;
    for (const link of this.links.values()) closeLink(link);
    this.links.clear();
    this.http.close();
    this.http.closeAllConnections();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const boxId = this.owners.get(req.socket);
    if (boxId === undefined) {
      req.socket.destroy();
      return;
    }
    closeIfAnsweredEarly(req, res);
    this.budget.meter(req, boxId);
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const route = this.routes.find((r) => r.prefix === '/' || path === r.prefix || path.startsWith(`${r.prefix}/`));
    if (!route) {
      sendJson(res, 404, { message: `no box service at ${path.slice(0, 200)}` });
      return;
    }
    if (!route.anyPolicy && this.allows && !this.allows(boxId, route.prefix)) {
      sendJson(res, 403, { message: `the network policy of this devbox does not allow ${route.prefix}` });
      return;
    }
    Promise.resolve()
      .then(() => route.handler(req, res, boxId))
      .catch((err: unknown) => {
        this.opts.log.error({ err, devbox: boxId, path: route.prefix }, 'box service handler failed');
        if (!res.headersSent) sendJson(res, 500, { message: 'the box service failed' });
        else res.destroy();
      });
  }
}

/** A body answered before it arrived is still read (and discarded) up to this size; past it the connection closes. */
const DRAINED_BODY_BYTES = 64 * 1024;

/**
 * An answer that leaves before its request's body was read (a 404, a 500, a handler refusing the request)
 * closes the connection once it is flushed: kept alive, the server would read and discard the rest of the
 * body at full speed on its main thread, for as long as the box cares to send it.
 */
function closeIfAnsweredEarly(req: IncomingMessage, res: ServerResponse): void {
  // A small body of a known length is read to its end after the answer (Node discards it) and the connection
  // stays: closing it would reset a client still sending those few bytes, which then loses the answer (an MCP
  // client refused with 401 before its JSON body arrived saw "remote end closed connection without response").
  if (req.headers['transfer-encoding'] === undefined && !(Number(req.headers['content-length']) > DRAINED_BODY_BYTES)) return;
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    // `Connection: close`, and the server destroys the socket once the answer is flushed.
    if (!req.complete) res.shouldKeepAlive = false;
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
}

function closeLink(link: Link): void {
  link.server.close();
  for (const s of link.sockets) s.destroy();
  rmSync(link.path, { force: true });
}

/** Answers with a JSON body (the shape of every devboxd error: `{"message": ...}`). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
