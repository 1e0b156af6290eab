import type { FastifyInstance } from 'fastify';
import type { Store } from '../../platform/store/types.js';

/** Liveness and readiness in one: answers 200 once the database answers. */
export function healthRoutes(app: FastifyInstance, store: Store): void {
  app.get('/healthz', { config: { auth: false }, schema: { hide: true } }, async () => {
    await store.ping();
    return { status: 'ok' };
  });
}
