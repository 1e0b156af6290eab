import type { Page, PageQuery } from '../../platform/store/types.js';
import type { RunListFilter, Scenario, ScenarioRun, StartRunInput } from '../scenarios/index.js';

/**
 * What benchmarks use of the scenarios module (branch evalscen's ScenarioService and ScenarioRunService
 * satisfy these): benchmarks hold scenario ids and drive scenario runs, never their tables.
 */
export interface ScenariosPort {
  /** Own or public scenario; 404 otherwise. */
  get(accountId: string, id: string): Promise<Scenario>;
}

export interface ScenarioRunsPort {
  start(accountId: string, input: StartRunInput): Promise<ScenarioRun>;
  checkRequirements(accountId: string, scenario: Scenario, input: Pick<StartRunInput, 'envVars' | 'secrets'>): Promise<void>;
  list(accountId: string, filter: RunListFilter, page: PageQuery): Promise<Page<ScenarioRun>>;
  complete(accountId: string, id: string): Promise<ScenarioRun>;
  cancel(accountId: string, id: string): Promise<ScenarioRun>;
}
