import type http from 'node:http';
import type http2 from 'node:http2';
import type { Readable } from 'node:stream';

/**
 * The headers of one hop (RFC 9110 §7.6.1): a proxy never passes them on, and HTTP/2 forbids them. What each
 * proxy drops besides (its own framing, a token meant for it) it adds to these.
 */
export const HOP_BY_HOP: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/**
 * A proxied answer's body to the client, holding back only once `buffer` bytes wait to be sent: `pipe` pauses
 * the source whenever 16 KiB wait, i.e. at every 64 KiB read, which costs a third of the throughput.
 */
export function pump(from: Readable, res: http.ServerResponse | http2.Http2ServerResponse, buffer: number): void {
  const to = res as http.ServerResponse;
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk) && to.writableLength >= buffer) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.on('end', () => to.end());
}
