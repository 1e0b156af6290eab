import type http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';
import type { Duplex } from 'node:stream';

/** A request handler of the one API port (HTTP/1.1 and h2c alike). */
export type FrontHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;
/** An HTTP/1.1 upgrade: true when it took the socket. */
export type FrontUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/**
 * What modules serve on the API port ahead of the API itself (tunnels by host name, PTY endpoints, SSH over
 * TLS), registered as they are built. Each wrapper gets the handler of those registered before it, the API
 * innermost, so a module built later sees a request first; upgrades chain the same way.
 */
export class HttpFronts {
  private readonly wrappers: ((next: FrontHandler) => FrontHandler)[] = [];
  private readonly upgraders: ((next: FrontUpgrade) => FrontUpgrade)[] = [];
  private tls: ((socket: net.Socket) => void) | undefined;

  wrap(wrapper: (next: FrontHandler) => FrontHandler): void {
    this.wrappers.push(wrapper);
  }

  upgrade(upgrader: (next: FrontUpgrade) => FrontUpgrade): void {
    this.upgraders.push(upgrader);
  }

  /** TLS connections to the API port go here (one module may take them: SSH). */
  takeTls(take: (socket: net.Socket) => void): void {
    if (this.tls) throw new Error('TLS connections to the API port are taken already');
    this.tls = take;
  }

  handler(api: FrontHandler): FrontHandler {
    return this.wrappers.reduce((next, wrap) => wrap(next), api);
  }

  /** The upgrade chain; without upgraders, undefined (the server refuses upgrades). */
  onUpgrade(): FrontUpgrade | undefined {
    if (!this.upgraders.length) return undefined;
    return this.upgraders.reduce((next, up) => up(next), (() => false) as FrontUpgrade);
  }

  onTls(): ((socket: net.Socket) => void) | undefined {
    return this.tls;
  }
}
