import type { FastifyInstance } from 'fastify';
import type { Db } from '../../../store/sqlite/db.js';

/** Liveness and readiness in one: answers 200 once the database answers. */
export function healthRoutes(app: FastifyInstance, db: Db): void {
  app.get('/healthz', { config: { auth: false }, schema: { hide: true } }, async () => {
    db.prepare('SELECT 1').get();
    return { status: 'ok' };
  });
}
