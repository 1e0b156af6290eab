import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { PEER_HEADER } from '../../platform/http/peers.js';

/** The path and protocol of an SSH-over-TLS connection one API server hands to another. */
export const TLS_PATH = '/_devboxd/peer/ssh-tls';
export const TLS_PROTOCOL = 'devboxd-ssh-tls';

/** How long a peer gets to accept a connection (and to switch protocols for one). */
const CONNECT_TIMEOUT_MS = 10_000;

/** A refusal as raw HTTP/1.1 on a socket that left the HTTP server (an upgrade): JSON, then closed. */
export function rawRefuse(socket: Duplex, status: number, message: string, code: string): void {
  const body = JSON.stringify({ message, error: code });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** A connection to the API server at `base` (http:// or https://, checked against `ca` and the system's). */
export function connectPeer(base: string, ca: string | undefined, onConnect: (peer: net.Socket) => void, onFail: (why: string) => void): net.Socket {
  const u = new URL(base);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const secure = u.protocol === 'https:';
  const port = Number(u.port) || (secure ? 443 : 80);
  const peer = secure
    ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ca, ALPNProtocols: ['http/1.1'] })
    : net.connect({ host, port });
  let connected = false;
  const timer = setTimeout(() => peer.destroy(new Error('timed out')), CONNECT_TIMEOUT_MS);
  peer.once(secure ? 'secureConnect' : 'connect', () => {
    connected = true;
    clearTimeout(timer);
    peer.setNoDelay(true);
    onConnect(peer);
  });
  peer.on('error', (err) => {
    clearTimeout(timer);
    if (!connected) onFail((err as NodeJS.ErrnoException).code ?? err.message);
  });
  return peer;
}

/** Both ways until either side ends; closing one closes the other. */
export function splice(a: Duplex, b: Duplex): void {
  a.pipe(b).pipe(a);
  a.once('close', () => b.destroy());
  b.once('close', () => a.destroy());
  a.on('error', () => a.destroy());
}

/** An upgrade's head as the peer gets it: the client's lines, this server's signature and the client's address. */
export function upgradeHead(req: http.IncomingMessage, signature: string): string {
  const lines = [`${req.method} ${req.url} HTTP/1.1`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === PEER_HEADER) continue;
    lines.push(`${raw[i]}: ${raw[i + 1]}`);
  }
  lines.push(`${PEER_HEADER}: ${signature}`);
  if (req.socket.remoteAddress) lines.push(`x-forwarded-for: ${req.socket.remoteAddress}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * Hands a TLS connection (its first record not yet read by anyone) to the peer at `base`: an HTTP/1.1 upgrade
 * to TLS_PROTOCOL signed as a peer's, then the client's bytes as they come, both ways. The peer serves it as a
 * TLS connection to its own API port.
 */
export function handTls(client: net.Socket, base: string, ca: string | undefined, signature: string, onFail: (why: string) => void): void {
  const authority = new URL(base).host;
  connectPeer(
    base,
    ca,
    (peer) => {
      peer.write(`GET ${TLS_PATH} HTTP/1.1\r\nhost: ${authority}\r\nconnection: Upgrade\r\nupgrade: ${TLS_PROTOCOL}\r\n${PEER_HEADER}: ${signature}\r\n\r\n`);
      let seen = Buffer.alloc(0);
      let spliced = false;
      peer.once('close', () => spliced || client.destroy());
      const onData = (chunk: Buffer) => {
        seen = Buffer.concat([seen, chunk]);
        const end = seen.indexOf('\r\n\r\n');
        if (end < 0) {
          if (seen.length > 8192) peer.destroy();
          return;
        }
        peer.off('data', onData);
        if (!/^HTTP\/1\.1 101 /.test(seen.toString('latin1', 0, end))) {
          peer.destroy();
          return onFail(seen.toString('latin1', 0, Math.min(end, 200)));
        }
        const rest = seen.subarray(end + 4);
        if (rest.length) client.write(rest);
        spliced = true;
        splice(client, peer);
        client.resume();
      };
      peer.on('data', onData);
    },
    onFail,
  );
}
