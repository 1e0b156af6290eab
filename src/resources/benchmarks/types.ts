import type { ObjectMount } from '../devboxes/index.js';
import type { LaunchParameters } from '../devboxes/index.js';
import type { RunMounts } from '../scenarios/index.js';

/** A named set of scenarios that run together (Runloop's benchmark definition). */
export interface Benchmark {
  id: string;
  /** The owning account; a public benchmark (the built-in one) is readable and runnable by every account. */
  accountId: string;
  name: string;
  isPublic: boolean;
  status: 'active' | 'archived';
  attribution: string | null;
  description: string | null;
  metadata: Record<string, string>;
  requiredEnvironmentVariables: string[];
  requiredSecretNames: string[];
  /** In the order given; no scenario twice. */
  scenarioIds: string[];
  createTimeMs: number;
  updateTimeMs: number;
}

/** Create and update input: undefined keeps a field (update) or takes its default (create). */
export interface BenchmarkPatch {
  name?: string;
  attribution?: string;
  description?: string;
  metadata?: Record<string, string>;
  requiredEnvironmentVariables?: string[];
  requiredSecretNames?: string[];
  scenarioIds?: string[];
}

export interface BenchmarkListFilter {
  name?: string;
  /** Matches the id exactly or the name as a substring. */
  search?: string;
}

export type BenchmarkRunState = 'running' | 'canceled' | 'completed' | 'failed';

/** What every scenario run of a benchmark run gets (Runloop's `runProfile`). */
export interface RunProfile {
  purpose: string | null;
  envVars: Record<string, string>;
  /** Environment variable name → secret name (or id). */
  secrets: Record<string, string>;
  launchParameters: LaunchParameters | null;
  mounts: ObjectMount[];
  /** File, code (without token), agent (without auth_token) and broker mounts; absent in runs of earlier versions. */
  otherMounts?: RunMounts;
}

export interface BenchmarkRun {
  id: string;
  accountId: string;
  /** Null for a benchmark job's run over a list of scenarios. */
  benchmarkId: string | null;
  /** DEVBOXD_NODE_NAME of the server that starts its scenario runs (and resumes it after a restart). */
  node: string;
  name: string | null;
  state: BenchmarkRunState;
  metadata: Record<string, string>;
  profile: RunProfile;
  /** The benchmark's scenarios when the run started: a later update of the benchmark does not change a run. */
  scenarioIds: string[];
  /** Σ scenario scores / number of scenario runs, once the run ended (see run-service.ts for cancel). */
  score: number | null;
  startTimeMs: number;
  endTimeMs: number | null;
  /** Why a run ended failed (a scenario run that could not start). */
  failureReason: string | null;
  /**
   * The benchmark job that drives the run (one run per agent config), or null. Such a run starts its scenario
   * runs through the job (its trials), not the pump, and the job ends it.
   */
  jobId: string | null;
}

export interface BenchmarkRunListFilter {
  benchmarkId?: string;
  name?: string;
  search?: string;
  state?: BenchmarkRunState;
}
