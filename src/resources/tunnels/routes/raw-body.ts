import type http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';

type Res = http.ServerResponse | http2.Http2ServerResponse;

/** Bodies at least this long skip the HTTP client's parser (below); shorter ones are not worth a connection. */
export const RAW_BODY_MIN = 1 << 20;

/**
 * Relays the rest of a box's response body (its length known) straight from the box's socket. Node's HTTP
 * client parses every body byte and copies it into a new buffer on its way through the parser (one more
 * copy and allocation per byte than the socket's own read: ~30 % of a large download's CPU here). Once the
 * head is parsed, the socket's reads go to the client as they come; what the parser had already taken from
 * the socket's last read still arrives through `ur`, before the socket's next read. The connection cannot go
 * back to the pool (its parser missed the body), so it is closed at the end. False when this response does
 * not qualify (unknown length, short, no body): the caller streams it through `ur` as usual.
 */
export function relayRawBody(ur: http.IncomingMessage, res: Res, method: string | undefined, maxBuffered: number): boolean {
  const length = Number(ur.headers['content-length']);
  const status = ur.statusCode ?? 0;
  const socket = ur.socket as net.Socket | null;
  if (!socket || !(length >= RAW_BODY_MIN) || method === 'HEAD' || status < 200 || status === 204 || status === 304) return false;
  const to = res as http.ServerResponse;
  let left = length;
  let done = false;
  const finish = () => {
    done = true;
    to.end();
    socket.destroy();
  };
  const send = (chunk: Buffer) => {
    if (done) return;
    const part = chunk.length > left ? chunk.subarray(0, left) : chunk;
    left -= part.length;
    if (!to.write(part) && to.writableLength >= maxBuffered && !socket.isPaused()) {
      socket.pause();
      to.once('drain', () => socket.resume());
    }
    if (left === 0) finish();
  };
  // The parser's listeners go; its bytes of the current read still come through `ur` (before any later read).
  for (const l of socket.listeners('data')) socket.removeListener('data', l as (b: Buffer) => void);
  for (const l of socket.listeners('end')) socket.removeListener('end', l as () => void);
  ur.on('data', send);
  ur.on('error', () => undefined);
  socket.on('data', send);
  socket.on('end', () => done || res.destroy());
  socket.on('close', () => done || res.destroy());
  return true;
}
