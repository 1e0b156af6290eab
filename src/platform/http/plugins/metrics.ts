import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

declare module 'fastify' {
  interface FastifyInstance {
    /** The registry /metrics serves: modules add their own metrics to it when they register their routes. */
    metrics: Registry;
  }
}

/**
 * Prometheus metrics: request counts and latencies by route, plus Node's process metrics. They describe every
 * account's traffic, so only keys of the operator's account read them (`operator`, see plugins/auth.ts).
 */
export function registerMetrics(app: FastifyInstance): Registry {
  const registry = new Registry();
  app.decorate('metrics', registry);
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'devboxd_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'devboxd_http_request_duration_seconds',
    help: 'Time to answer (headers and body handed to the socket), by route',
    labelNames: ['route', 'method'] as const,
    buckets: [0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30],
    registers: [registry],
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ route, method: req.method, status: String(reply.statusCode) });
    latency.observe({ route, method: req.method }, reply.elapsedTime / 1000);
  });
  app.get('/metrics', { config: { operator: true }, schema: { hide: true } }, async (_req, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
  return registry;
}
