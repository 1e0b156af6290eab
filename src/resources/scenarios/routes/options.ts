import type { JobKind } from '../../../platform/jobs/job-runner.js';
import type { LogReader } from '../run-logs.js';
import type { ScenarioRunService } from '../run-service.js';
import type { ScenarioService } from '../scenario-service.js';
import type { ScorerService } from '../scorer-service.js';

/**
 * The scenarios module's services and the routes' options. Kept out of ../index.ts and routes/index.ts: the route
 * files import these, and both of those import the route files (an import cycle).
 */
export interface ScenariosModule {
  scorers: ScorerService;
  scenarios: ScenarioService;
  runs: ScenarioRunService;
  /** Durable job kinds, registered with the job runner by the module (background kinds: they wait for `reconcile`). */
  jobs: Record<string, JobKind>;
  /** The lifecycle's stop listener: an open run whose box ended ends `timeout` or `failed`. */
  onStopped: (devboxId: string, ended: boolean) => void;
  /** At start, after the devboxes were adopted: settles runs whose box ended meanwhile, then lets scoring jobs run. */
  reconcile(): Promise<void>;
}

export interface ScenarioRouteOptions {
  scenarios: ScenariosModule;
  /** The devbox log of a run's box (for download_logs). */
  readLogs: LogReader;
}
