import type { ExecutionService } from '../execution-service.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { controlRoutes } from './control.js';
import { executeRoutes } from './execute.js';
import { logRoutes } from './logs.js';
import { executionOperations } from './operations.js';
import { readRoutes } from './read.js';
import { streamRoutes } from './stream.js';

/** Executions and devbox logs; like every devbox route they need RESOURCE_TYPE_DEVBOXES on a restricted key. */
export const executionRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', executionOperations, (scope, opts: { executions: ExecutionService }) => {
  executeRoutes(scope, opts.executions);
  readRoutes(scope, opts.executions);
  controlRoutes(scope, opts.executions);
  streamRoutes(scope, opts.executions);
  logRoutes(scope, opts.executions);
});
