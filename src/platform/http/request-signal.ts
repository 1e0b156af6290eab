import type { FastifyReply } from 'fastify';

/**
 * An AbortSignal that fires when the client goes away before the answer is sent, so long-polls, streams
 * and transfers stop working for nobody. Works for HTTP/1.1 sockets and HTTP/2 streams alike.
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const ctl = new AbortController();
  const res = reply.raw;
  const onClose = () => {
    if (!res.writableFinished) ctl.abort();
  };
  res.once('close', onClose);
  return ctl.signal;
}
