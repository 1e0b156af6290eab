import type { CreateDevboxInput, ObjectMount } from '../devboxes/index.js';
import type { LaunchParameters } from '../devboxes/index.js';

/** A scenario run's states (Runloop's): running → scoring → scored → completed, or canceled/timeout/failed. */
export type ScenarioRunState = 'running' | 'scoring' | 'scored' | 'completed' | 'canceled' | 'timeout' | 'failed';

/** States a run never leaves: its devbox is shut down (or was gone) by then. */
export const RUN_TERMINAL: ReadonlySet<ScenarioRunState> = new Set(['completed', 'canceled', 'timeout', 'failed']);

/** One scoring function as stored (wire-shaped `scorer`, already validated). */
export type Scorer =
  | { type: 'bash_script_scorer'; bash_script: string }
  | { type: 'command_scorer'; command: string }
  | { type: 'python_script_scorer'; python_script: string; python_version_constraint?: string; requirements_contents?: string }
  | { type: 'test_based_scorer'; test_command: string; test_files: { file_path: string; file_contents: string }[] }
  | { type: 'custom_scorer'; custom_scorer_type: string; scorer_params?: unknown }
  | { type: 'ast_grep_scorer'; pattern: string; search_directory: string; lang?: string };

export interface ScoringFunction {
  name: string;
  weight: number;
  scorer: Scorer;
}

/** Where a run's devbox comes from and where its agent and scorers work. */
export interface ScenarioEnvironment {
  blueprintId: string | null;
  snapshotId: string | null;
  workingDirectory: string | null;
  launchParameters: LaunchParameters | null;
}

export interface Scenario {
  id: string;
  /** The owning account; a public scenario is readable and runnable by every account. */
  accountId: string;
  name: string;
  status: 'active' | 'archived';
  isPublic: boolean;
  inputContext: { problem_statement: string; additional_context?: unknown };
  environment: ScenarioEnvironment | null;
  scoringFunctions: ScoringFunction[];
  referenceOutput: string | null;
  metadata: Record<string, string>;
  requiredEnvironmentVariables: string[];
  requiredSecretNames: string[];
  scorerTimeoutSec: number;
  validationType: 'UNSPECIFIED' | 'FORWARD' | 'REVERSE' | 'EVALUATION' | null;
  createTimeMs: number;
  updateTimeMs: number;
}

export interface ScoringFunctionResult {
  name: string;
  /** In [0, 1]; 0 when `state` is error. */
  score: number;
  /** What the function printed (stdout then stderr, the last SCORER_OUTPUT_MAX_BYTES), or why it failed. */
  output: string;
  state: 'complete' | 'error';
}

export interface ScoringContractResult {
  /** Σ weight·score / Σ weight over every function (an errored function counts 0). */
  score: number;
  functions: ScoringFunctionResult[];
}

export interface ScenarioRun {
  id: string;
  accountId: string;
  scenarioId: string;
  devboxId: string;
  state: ScenarioRunState;
  name: string | null;
  metadata: Record<string, string>;
  benchmarkRunId: string | null;
  purpose: string | null;
  environmentVariables: Record<string, string>;
  /** Environment variable name → secret name. */
  secretsProvided: Record<string, string>;
  scoringResult: ScoringContractResult | null;
  /** Set once the run asks to complete: the scoring job shuts the box down and ends the run `completed`. */
  completeRequested: boolean;
  startTimeMs: number;
  /** Set once terminal; duration_ms is end - start (or now - start while open). */
  endTimeMs: number | null;
  /** Why a run ended failed/timeout (the devbox's failure or shutdown reason). */
  endReason: string | null;
}

/** What starts a run: the scenario and the run profile (benchmark runs pass theirs to every scenario run). */
export interface StartRunInput {
  scenarioId: string;
  runName?: string | null;
  benchmarkRunId?: string | null;
  metadata?: Record<string, string> | null;
  purpose?: string | null;
  envVars?: Record<string, string> | null;
  /** Environment variable name → secret name (or id). */
  secrets?: Record<string, string> | null;
  /** Wire-shaped launch_parameters, applied over the scenario's own per field. */
  launchParameters?: LaunchParameters | null;
  mounts?: ObjectMount[] | null;
  /** The profile's other mounts, placed as a devbox create places them (file, code, agent and broker mounts). */
  otherMounts?: RunMounts | null;
  /** Which try of this scenario in its benchmark run (a benchmark job's retries); 0 by default. */
  attempt?: number;
}

/** A run profile's mounts besides object mounts, in the devbox create's terms. */
export type RunMounts = Pick<CreateDevboxInput, 'fileMounts' | 'codeMounts' | 'agentMounts' | 'brokerMounts'>;

export interface RunListFilter {
  scenarioId?: string;
  benchmarkRunId?: string;
  state?: ScenarioRunState;
  name?: string;
  /** Matches the run's id or name. */
  search?: string;
}

/**
 * Called after a run's state change is committed (every change, terminal ones included), in the process that
 * made it. Not durable: a listener that must not miss one re-reads the runs it waits for at start (`list`).
 * A throw is logged and ignored.
 */
export type RunListener = (run: ScenarioRun) => void;
