import type { FastifyInstance } from 'fastify';
import type { DevboxService } from '../../../domain/devboxes/devbox-service.js';
import type { SuspendService } from '../../../domain/snapshots/suspend-service.js';
import { changeRoutes } from './change.js';
import { createRoutes } from './create.js';
import { readRoutes } from './read.js';
import { suspendRoutes } from './suspend.js';

/** Devbox routes; every one needs RESOURCE_TYPE_DEVBOXES on a restricted key. */
export async function devboxRoutes(scope: FastifyInstance, opts: { devboxes: DevboxService; suspend?: SuspendService }): Promise<void> {
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), resource: 'RESOURCE_TYPE_DEVBOXES' } as typeof route.config;
  });
  createRoutes(scope, opts.devboxes);
  readRoutes(scope, opts.devboxes);
  changeRoutes(scope, opts.devboxes);
  if (opts.suspend) suspendRoutes(scope, opts.suspend);
}
