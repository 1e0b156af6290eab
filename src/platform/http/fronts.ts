import type http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ElsewhereError } from './peers.js';

/** A request handler of the one API port (HTTP/1.1 and h2c alike). */
export type FrontHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;
/** An HTTP/1.1 upgrade: true when it took the socket. */
export type FrontUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean;
/** A TLS connection to the API port (its first bytes put back, the socket paused). */
export type FrontTls = (socket: net.Socket) => void;
/** Sends a parsed API request on to the API server of the node `to` names and answers with what it says. */
export type Forwarder = (req: FastifyRequest, reply: FastifyReply, to: ElsewhereError) => Promise<unknown>;

/**
 * What modules serve on the API port ahead of the API itself (tunnels by host name, PTY endpoints, SSH over
 * TLS), registered as they are built. Each wrapper gets the handler of those registered before it, the API
 * innermost, so a module built later sees a request first; upgrades and TLS connections chain the same way.
 */
export class HttpFronts {
  private readonly wrappers: ((next: FrontHandler) => FrontHandler)[] = [];
  private readonly upgraders: ((next: FrontUpgrade) => FrontUpgrade)[] = [];
  private tls: FrontTls | undefined;
  private readonly tlsWrappers: ((next: FrontTls) => FrontTls)[] = [];
  private forwarder: Forwarder | undefined;

  wrap(wrapper: (next: FrontHandler) => FrontHandler): void {
    this.wrappers.push(wrapper);
  }

  upgrade(upgrader: (next: FrontUpgrade) => FrontUpgrade): void {
    this.upgraders.push(upgrader);
  }

  /** TLS connections to the API port go here (one module may take them: SSH). */
  takeTls(take: FrontTls): void {
    if (this.tls) throw new Error('TLS connections to the API port are taken already');
    this.tls = take;
  }

  /** Sees TLS connections before the module that takes them (without one, none is accepted). */
  wrapTls(wrapper: (next: FrontTls) => FrontTls): void {
    this.tlsWrappers.push(wrapper);
  }

  /** What forwards a request a handler found belongs on another node (one module: routing). */
  forwardWith(forwarder: Forwarder): void {
    if (this.forwarder) throw new Error('a forwarder is registered already');
    this.forwarder = forwarder;
  }

  /** The forwarder, undefined when no module forwards (a request for another node is then refused). */
  forwarding(): Forwarder | undefined {
    return this.forwarder;
  }

  handler(api: FrontHandler): FrontHandler {
    return this.wrappers.reduce((next, wrap) => wrap(next), api);
  }

  /** The upgrade chain; without upgraders, undefined (the server refuses upgrades). */
  onUpgrade(): FrontUpgrade | undefined {
    if (!this.upgraders.length) return undefined;
    return this.upgraders.reduce((next, up) => up(next), (() => false) as FrontUpgrade);
  }

  onTls(): FrontTls | undefined {
    const take = this.tls;
    return take && this.tlsWrappers.reduce((next, wrap) => wrap(next), take);
  }
}
