import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Deps } from './deps.js';
import type { Logger } from './lib/logger.js';
import { registerAuth } from './http/plugins/auth.js';
import { registerErrorHandler } from './http/plugins/error-handler.js';
import { registerIdempotency } from './http/plugins/idempotency.js';
import { registerMetrics } from './http/plugins/metrics.js';
import { dualProtocolServer } from './http/server.js';
import { registerRoutes } from './http/routes/index.js';

export interface AppOptions {
  logger: Logger;
  bodyLimit: number;
}

/** Builds the HTTP app over already-constructed services; never listens (main.ts and tests do). */
export async function buildApp(deps: Deps, opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger,
    bodyLimit: opts.bodyLimit,
    serverFactory: dualProtocolServer as never,
    requestIdHeader: false,
    ajv: { customOptions: { coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false } },
  }) as unknown as FastifyInstance;

  // The SDK sends `Content-Type: application/json` with no body on parameterless POSTs: read that as {}.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, {});
    try {
      done(null, JSON.parse(text));
    } catch {
      const err = new Error('request body is not valid JSON') as Error & { statusCode: number };
      err.statusCode = 400;
      done(err, undefined);
    }
  });

  await app.register(swagger, {
    openapi: {
      info: { title: 'devboxd', version: '0.1.0', description: 'Runloop-compatible sandbox server' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  registerErrorHandler(app);
  registerAuth(app, deps.accounts);
  registerIdempotency(app, deps.idempotency);
  registerMetrics(app);
  await registerRoutes(app, deps);
  app.get('/openapi.json', { config: { auth: false }, schema: { hide: true } }, async () => app.swagger());
  return app;
}
