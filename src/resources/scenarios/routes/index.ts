import { resourceModule } from '../../../platform/http/resource-module.js';
import { runRoutes } from './runs.js';
import { scenarioRoutes } from './scenarios.js';
import { scorerRoutes } from './scorers.js';
import { scenarioOperations } from './operations.js';
import type { ScenarioRouteOptions } from './options.js';

/** Scenarios, their runs and custom scorers: Runloop's scenario scope governs all three. */
export const scenarioModuleRoutes = resourceModule('RESOURCE_TYPE_SCENARIOS', scenarioOperations, (app, opts: ScenarioRouteOptions) => {
  scorerRoutes(app, opts);
  scenarioRoutes(app, opts);
  runRoutes(app, opts);
});
