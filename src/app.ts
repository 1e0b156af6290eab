import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Deps } from './deps.js';
import type { Logger } from './lib/logger.js';
import { registerConsole } from './platform/http/console.js';
import { registerAuth } from './platform/http/plugins/auth.js';
import { registerErrorHandler } from './platform/http/plugins/error-handler.js';
import { registerIdempotency } from './platform/http/plugins/idempotency.js';
import { shareTitledSchemas } from './platform/http/openapi/components.js';
import { registerMetrics } from './platform/http/plugins/metrics.js';
import { dualProtocolServer } from './platform/http/server.js';
import type { ConnectionLimits } from './platform/http/connection-limits.js';
import { registerJsonBody } from './platform/http/json-body.js';
import { registerValidation } from './platform/http/validation.js';

export interface AppOptions {
  logger: Logger;
  bodyLimit: number;
  /** A JSON body must arrive within this many ms (408 otherwise). */
  bodyTimeoutMs: number;
  /** Headers timeout, caps on connections before their headers, HTTP/2 resets (defaults when absent). */
  connections?: ConnectionLimits;
  /** Origins besides its own the web console may call (its CSP's connect-src). */
  consoleOrigins?: string[];
}

/** JSON nesting past this is a 400: no wire shape of the API is deeper, and deep values cost every reader. */
const MAX_JSON_DEPTH = 32;

/** Builds the HTTP app over already-constructed services; never listens (main.ts and tests do). */
export async function buildApp(deps: Deps, opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger,
    bodyLimit: opts.bodyLimit,
    // What modules serve ahead of Fastify (tunnel traffic streamed to the box, PTY endpoints, SSH over TLS).
    serverFactory: ((handler: Parameters<typeof dualProtocolServer>[0]) =>
      dualProtocolServer(deps.fronts.handler(handler as never) as never, deps.fronts.onUpgrade(), deps.fronts.onTls(), opts.connections)) as never,
    requestIdHeader: false,
  }) as unknown as FastifyInstance;

  registerValidation(app);
  registerJsonBody(app, { limit: opts.bodyLimit, timeoutMs: opts.bodyTimeoutMs, maxDepth: MAX_JSON_DEPTH });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'devboxd', version: '0.1.0', description: 'Runloop-compatible sandbox server' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // Views are written once, under components.schemas, when the document is first asked for (not at start).
    transformObject: (doc) => ('openapiObject' in doc ? shareTitledSchemas(doc.openapiObject) : doc.swaggerObject),
  });

  registerErrorHandler(app, () => deps.fronts.forwarding());
  registerAuth(app, deps.accounts);
  registerIdempotency(app, deps.idempotency, deps.node, {
    fingerprint: (data) => deps.sealer.fingerprint(data),
    seal: (plain, aad) => deps.sealer.seal(plain, `x-request-id answer ${aad}`),
    open: (sealed, aad) => deps.sealer.open(sealed, `x-request-id answer ${aad}`),
  });
  registerMetrics(app);
  // Every module's routes, each with its auth row.
  await deps.composition.routes(app);
  app.get('/openapi.json', { config: { auth: false }, schema: { hide: true } }, async () => app.swagger());
  // The reference page at /docs: Swagger UI's own files, served from its package (no CDN), over the same document.
  // Public like the document itself: it holds no data, and a key is typed into the page, not sent to load it.
  await app.register(async (scope) => {
    scope.addHook('onRoute', (r) => {
      r.config = { ...(r.config as object), auth: false };
    });
    await scope.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  });
  await registerConsole(app, { connect: opts.consoleOrigins });
  return app;
}
