import type { FastifyInstance } from 'fastify';
import type { DevboxService } from '../../../domain/devboxes/devbox-service.js';
import { changeRoutes } from './change.js';
import { createRoutes } from './create.js';
import { readRoutes } from './read.js';

/** Devbox routes; every one needs RESOURCE_TYPE_DEVBOXES on a restricted key. */
export async function devboxRoutes(scope: FastifyInstance, opts: { devboxes: DevboxService }): Promise<void> {
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), resource: 'RESOURCE_TYPE_DEVBOXES' } as typeof route.config;
  });
  createRoutes(scope, opts.devboxes);
  readRoutes(scope, opts.devboxes);
  changeRoutes(scope, opts.devboxes);
}
