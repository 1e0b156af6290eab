import type { FastifyReply } from 'fastify';

type Response = { writableEnded: boolean; writableFinished: boolean };

/**
 * Whether the whole answer went out: ended by the server and flushed. `writableFinished` alone does not say
 * it on HTTP/2, where a stream the client reset (RST_STREAM, or its session destroyed) counts as finished
 * though the server never ended it; `writableEnded` (end() was called) tells the two apart on both protocols.
 */
export function answerSent(res: Response): boolean {
  return res.writableEnded && res.writableFinished;
}

/**
 * An AbortSignal that fires when the client goes away before the answer is sent, so long-polls, streams
 * and transfers stop working for nobody (and close their files at once, not at garbage collection). Works for
 * HTTP/1.1 sockets and HTTP/2 streams alike. Callers often get here after an await (auth, a replay query): a
 * client that left meanwhile has already emitted 'close', which a listener added now never sees, so the signal
 * is aborted at once in that case.
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const ctl = new AbortController();
  const res = reply.raw;
  if (alreadyGone(reply)) {
    ctl.abort();
    return ctl.signal;
  }
  const onClose = () => {
    if (!answerSent(res)) ctl.abort();
  };
  res.once('close', onClose);
  return ctl.signal;
}

/** Whether the response, its socket or its HTTP/2 stream is closed without the answer having been sent. */
function alreadyGone(reply: FastifyReply): boolean {
  const res = reply.raw as FastifyReply['raw'] & { closed?: boolean; stream?: { destroyed?: boolean; closed?: boolean } };
  if (answerSent(res)) return false;
  return Boolean(res.destroyed || res.closed || reply.request.raw.socket?.destroyed || res.stream?.destroyed || res.stream?.closed);
}
