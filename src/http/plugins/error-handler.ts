import type { FastifyError, FastifyInstance } from 'fastify';
import { DomainError, STATUS_OF } from '../../domain/errors.js';

/**
 * The one place errors become HTTP answers: `{"message": ..., "error": <code>}` as JSON. Domain errors carry
 * their code; Fastify's own (validation, body limits, bad JSON) keep their 4xx status; anything else is a 500
 * whose details stay in the log.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | DomainError | Error, req, reply) => {
    if (err instanceof DomainError) {
      if (err.retryable === false) reply.header('x-should-retry', 'false');
      if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
      return reply.status(err.status).send({ message: err.message, error: err.code });
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      const first = fe.validation[0];
      const where = fe.validationContext ?? 'body';
      const field = first?.instancePath ? first.instancePath.slice(1).replaceAll('/', '.') : '';
      const prop = (first?.params as { missingProperty?: string } | undefined)?.missingProperty;
      const name = [where, field, prop].filter(Boolean).join('.');
      const message = `invalid ${name}: ${first?.message ?? fe.message}`;
      return reply.status(400).send({ message, error: 'invalid_request' });
    }
    const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
    if (status >= 400 && status < 500) {
      const code = status === 413 ? 'payload_too_large' : status === 404 ? 'not_found' : 'invalid_request';
      return reply.status(status).send({ message: fe.message, error: code });
    }
    req.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ message: 'internal server error', error: 'internal' });
  });

  app.setNotFoundHandler((req, reply) => {
    reply.status(STATUS_OF.not_found).send({ message: `no such endpoint: ${req.method} ${req.url}`, error: 'not_found' });
  });
}
