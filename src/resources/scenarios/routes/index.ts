import { resourceModule } from '../../../platform/http/resource-module.js';
import type { ScenariosModule } from '../index.js';
import type { LogReader } from '../run-logs.js';
import { runRoutes } from './runs.js';
import { scenarioRoutes } from './scenarios.js';
import { scorerRoutes } from './scorers.js';

export interface ScenarioRouteOptions {
  scenarios: ScenariosModule;
  /** The devbox log of a run's box (for download_logs). */
  readLogs: LogReader;
}

/** Scenarios, their runs and custom scorers: Runloop's scenario scope governs all three. */
export const scenarioModuleRoutes = resourceModule('RESOURCE_TYPE_SCENARIOS', (app, opts: ScenarioRouteOptions) => {
  scorerRoutes(app, opts);
  scenarioRoutes(app, opts);
  runRoutes(app, opts);
});
