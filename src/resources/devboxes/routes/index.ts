import type { DevboxService } from '../devbox-service.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { changeRoutes } from './change.js';
import { createRoutes } from './create.js';
import { registerDevboxMetrics } from './metrics.js';
import { devboxOperations } from './operations.js';
import { readRoutes } from './read.js';
import { type Suspender, suspendRoutes } from './suspend.js';

/** Devbox routes; every one needs RESOURCE_TYPE_DEVBOXES on a restricted key. */
export const devboxRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', devboxOperations, (scope, opts: { devboxes: DevboxService; suspend?: Suspender }) => {
  registerDevboxMetrics(scope, opts.devboxes);
  createRoutes(scope, opts.devboxes);
  readRoutes(scope, opts.devboxes);
  changeRoutes(scope, opts.devboxes);
  if (opts.suspend) suspendRoutes(scope, opts.suspend, opts.devboxes);
});

/** Suspend and resume, registered by the module that suspends (snapshots): the same auth row as the rest. */
export const devboxSuspendRoutes = resourceModule(
  'RESOURCE_TYPE_DEVBOXES',
  devboxOperations,
  (scope, opts: { devboxes: DevboxService; suspend: Suspender }) => {
    suspendRoutes(scope, opts.suspend, opts.devboxes);
  },
);
