import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, STATUS_OF } from '../../errors.js';
import type { Forwarder } from '../fronts.js';
import { ElsewhereError } from '../peers.js';
import { describeValidationError } from '../validation.js';

/** Error codes of Fastify's own 4xx answers (bad JSON, body limits, media types...). */
function codeOf(status: number): string {
  if (status === 404) return 'not_found';
  if (status === 408) return 'timeout';
  if (status === 413) return 'payload_too_large';
  if (status === 415) return 'unsupported_media_type';
  return 'invalid_request';
}

/** Every 4xx is logged with its message, so an operator can tell a client what it got wrong. */
function send(req: FastifyRequest, reply: FastifyReply, status: number, message: string, code: string) {
  if (status < 500) req.log.info({ status, error: code, message }, 'request rejected');
  return reply.status(status).send({ message, error: code });
}

/**
 * The one place errors become HTTP answers: `{"message": ..., "error": <code>}` as JSON. Domain errors carry
 * their code; Fastify's own (validation, body limits, bad JSON) keep their 4xx status; anything else is a 500
 * whose details stay in the log. A request a handler found to belong on another node (ElsewhereError) is
 * forwarded there by `forwarding` (the answer it gets is this request's answer, stored for x-request-id too).
 */
export function registerErrorHandler(app: FastifyInstance, forwarding: () => Forwarder | undefined = () => undefined): void {
  const answer = (err: FastifyError | DomainError | Error, req: FastifyRequest, reply: FastifyReply): unknown => {
    if (err instanceof ElsewhereError) {
      const forward = forwarding();
      if (forward) return forward(req, reply, err).catch((why: Error) => answer(why, req, reply));
      if (err.here)
        return err.here().then(
          (v) => reply.send(v),
          (why: Error) => answer(why, req, reply),
        );
      return send(req, reply, 503, `this request belongs on node ${err.node}, and this server forwards to no other node`, 'unavailable');
    }
    if (err instanceof DomainError) {
      if (err.retryable === false) reply.header('x-should-retry', 'false');
      if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
      if (err.status >= 500) req.log.error({ err }, 'request failed');
      return send(req, reply, err.status, err.message, err.code);
    }
    const fe = err as FastifyError & { closeConnection?: boolean };
    if (fe.validation) {
      const message = describeValidationError(fe.validation[0] as never, fe.validationContext ?? 'body', fe.message);
      return send(req, reply, 400, message, 'invalid_request');
    }
    const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
    if (status >= 400 && status < 500) {
      // An unread body leaves an HTTP/1.1 connection unusable for the next request (h2 forbids the header).
      if (fe.closeConnection && req.raw.httpVersionMajor === 1) reply.header('connection', 'close');
      return send(req, reply, status, fe.message, codeOf(status));
    }
    req.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ message: 'internal server error', error: 'internal' });
  };
  app.setErrorHandler(answer);

  app.setNotFoundHandler((req, reply) => {
    send(req, reply, STATUS_OF.not_found, `no such endpoint: ${req.method} ${req.url}`, 'not_found');
  });
}
