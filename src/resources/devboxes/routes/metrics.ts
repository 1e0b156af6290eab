import type { FastifyInstance } from 'fastify';
import { Gauge } from 'prom-client';
import type { DevboxService } from '../devbox-service.js';
import { DEVBOX_STATUSES } from '../types.js';

/**
 * `devboxd_devboxes{status}`: how many boxes of every account are in each status, read from the database at
 * each scrape (one GROUP BY), so every API server of a cluster reports the same cluster-wide figure and a
 * dashboard takes max() rather than sum() across servers. Every status is reported, 0 included, so a series
 * never vanishes when the last box leaves it. Pooled boxes (no account) are not counted.
 */
export function registerDevboxMetrics(app: FastifyInstance, devboxes: DevboxService): void {
  if (!app.hasDecorator('metrics')) return;
  new Gauge({
    name: 'devboxd_devboxes',
    help: 'Devboxes of every account by status (the whole database: the same on every API server)',
    labelNames: ['status'] as const,
    registers: [app.metrics],
    async collect() {
      const counts = await devboxes.countByStatus();
      for (const status of DEVBOX_STATUSES) this.set({ status }, counts[status] ?? 0);
    },
  });
}
