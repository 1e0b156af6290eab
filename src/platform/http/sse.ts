import type { FastifyReply } from 'fastify';
import { clientGone } from './request-signal.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };

/** Comment lines keep idle streams (and the proxies on their way) from timing out. */
const KEEP_ALIVE_MS = 15_000;

export interface SseStream {
  /** Fires when the client goes away: producers stop at once. */
  readonly signal: AbortSignal;
  /** Sends one unnamed event with a JSON payload; resolves when the transport can take more. */
  data(payload: unknown): Promise<void>;
  /**
   * Sends one unnamed event per JSON payload, in one write; resolves when the transport can take more.
   * `ids` (one per payload) become the events' `id:` fields, which an EventSource resumes from (Last-Event-ID).
   */
  dataAll(payloads: readonly unknown[], ids?: readonly string[]): Promise<void>;
  comment(text: string): void;
  /** `event: error` with `{code, message}` (the SDK turns it into an APIError of that status). */
  error(code: number, message: string): void;
  end(): void;
}

/**
 * Starts a server-sent event stream: headers go out at once (clients time out until they see them), then
 * events as they are written, with back-pressure. Works on HTTP/1.1 and HTTP/2 responses alike (no
 * connection-level headers). Errors known before streaming must be thrown before calling this.
 */
export function startSse(reply: FastifyReply): SseStream {
  if (reply.request.method === 'HEAD') return headOnly(reply);
  const signal = clientGone(reply);
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, SSE_HEADERS);
  res.write(': stream\n\n');
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  keepAlive.unref();
  // A client gone before the stream started emits no further 'close': the signal says so instead.
  if (signal.aborted) clearInterval(keepAlive);
  else res.once('close', () => clearInterval(keepAlive));

  function write(text: string): boolean {
    if (res.writableEnded || res.destroyed) return true;
    return res.write(text);
  }

  async function dataAll(payloads: readonly unknown[], ids?: readonly string[]): Promise<void> {
    const id = (i: number) => (ids ? `id: ${ids[i]!.replace(/[\r\n]/g, '')}\n` : '');
    if (write(payloads.map((p, i) => `${id(i)}data: ${JSON.stringify(p)}\n\n`).join(''))) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      res.on('drain', done);
      signal.addEventListener('abort', done);
    });
  }

  return {
    signal,
    data: (payload) => dataAll([payload]),
    dataAll,
    comment(text) {
      write(`: ${text.replace(/\n/g, ' ')}\n\n`);
    },
    error(code, message) {
      write(`event: error\ndata: ${JSON.stringify({ code, message })}\n\n`);
    },
    end() {
      clearInterval(keepAlive);
      if (!res.writableEnded) res.end();
    },
  };
}

/**
 * HEAD of a stream (Fastify serves it with the GET handler): the headers at once and the answer ended, since a
 * HEAD has no body to wait for (Node's HTTP/1.1 sends headers with the first body byte, so a HEAD that only
 * writes would never answer). The signal is already aborted: producers stop before they start.
 */
function headOnly(reply: FastifyReply): SseStream {
  reply.hijack();
  reply.raw.writeHead(200, SSE_HEADERS);
  reply.raw.end();
  const signal = AbortSignal.abort();
  const none = async () => undefined;
  return { signal, data: none, dataAll: none, comment: () => undefined, error: () => undefined, end: () => undefined };
}
