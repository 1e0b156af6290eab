import type { FastifyInstance } from 'fastify';
import type { IdempotencyStore } from '../../store/types.js';
import './context.js';

const WINDOW_MS = 10 * 60_000;

/**
 * The SDK repeats one `x-request-id` on every retry of a non-GET call. A JSON answer to such a call is kept
 * for ten minutes and replayed to a retry, so a retried create never makes a second resource.
 */
export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore): void {
  const key = (url: string, method: string) => `${method} ${url}`;
  app.addHook('preHandler', async (req, reply) => {
    const id = req.headers['x-request-id'];
    if (req.method === 'GET' || typeof id !== 'string' || !req.principal || req.routeOptions.config?.idempotent === false) return;
    const hit = store.get(req.principal.accountId, id, key(req.url, req.method), Date.now() - WINDOW_MS);
    if (hit) {
      reply.header('x-idempotent-replay', 'true');
      return reply.status(hit.status).type('application/json').send(hit.body);
    }
  });
  app.addHook('onSend', async (req, reply, payload) => {
    const id = req.headers['x-request-id'];
    if (req.method === 'GET' || typeof id !== 'string' || !req.principal || req.routeOptions.config?.idempotent === false) return payload;
    if (reply.getHeader('x-idempotent-replay') || typeof payload !== 'string') return payload;
    if (reply.statusCode >= 200 && reply.statusCode < 300) {
      store.put(req.principal.accountId, id, key(req.url, req.method), { status: reply.statusCode, body: payload });
    }
    return payload;
  });
  const prune = setInterval(() => store.prune(Date.now() - WINDOW_MS), 60_000);
  prune.unref();
  app.addHook('onClose', async () => clearInterval(prune));
}
