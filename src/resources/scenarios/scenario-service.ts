import { newId } from '../../lib/ids.js';
import { ERRORS } from '../../platform/errors.js';
import type { Page, PageQuery } from '../../platform/store/types.js';
import type { LaunchParameters } from '../devboxes/index.js';
import { parseContract } from './contract.js';
import type { ScorerService } from './scorer-service.js';
import type { SqlScenarioStore, ScenarioFilter } from './sql-scenario-store.js';
import type { Scenario, ScenarioEnvironment } from './types.js';

/** Runloop's default scoring timeout: 30 minutes. */
export const DEFAULT_SCORER_TIMEOUT_SEC = 1800;
/** The longest a scenario's scoring may take: a day. */
export const MAX_SCORER_TIMEOUT_SEC = 86_400;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const VALIDATION_TYPES = ['UNSPECIFIED', 'FORWARD', 'REVERSE', 'EVALUATION'] as const;

export interface ScenarioInput {
  name?: string | null;
  inputContext?: { problem_statement?: string | null; additional_context?: unknown } | null;
  environment?: Partial<ScenarioEnvironment> | null;
  /** Wire-shaped `scoring_function_parameters`, validated here. */
  scoringFunctions?: unknown;
  referenceOutput?: string | null;
  metadata?: Record<string, string> | null;
  requiredEnvironmentVariables?: string[] | null;
  requiredSecretNames?: string[] | null;
  scorerTimeoutSec?: number | null;
  /** '' clears it. */
  validationType?: Scenario['validationType'] | '';
}

/**
 * Scenarios: a problem, the environment its run's devbox boots from, and the weighted scoring functions that
 * score the run. An account reads and runs its own and the public ones; it changes only its own.
 */
export class ScenarioService {
  constructor(
    private readonly store: SqlScenarioStore,
    private readonly scorers: ScorerService,
    /** A benchmark's scenario ids (the `benchmark_id` list filter); undefined for an unknown benchmark. */
    /** DEVBOXD_SCENARIO_ACCOUNT_MAX_SCENARIOS. */
    private readonly accountMax: number,
    private readonly benchmarkScenarioIds?: (accountId: string, benchmarkId: string) => Promise<string[] | undefined>,
  ) {}

  async create(accountId: string, input: ScenarioInput, opts: { isPublic?: boolean } = {}): Promise<Scenario> {
    if (!input.name) throw ERRORS.invalid('name is required');
    if (!input.inputContext || typeof input.inputContext.problem_statement !== 'string') throw ERRORS.invalid('input_context.problem_statement is required');
    const held = await this.store.count(accountId);
    if (held >= this.accountMax) throw ERRORS.forbidden(`the account holds ${held} scenarios, its limit (DEVBOXD_SCENARIO_ACCOUNT_MAX_SCENARIOS)`);
    const now = Date.now();
    const s: Scenario = {
      id: newId('scn'),
      accountId,
      name: input.name,
      status: 'active',
      isPublic: opts.isPublic ?? false,
      inputContext: contextOf(input.inputContext.problem_statement, input.inputContext.additional_context),
      environment: environmentOf(input.environment),
      scoringFunctions: await parseContract(input.scoringFunctions, async (t) => (await this.scorers.find(accountId, t)) !== undefined),
      referenceOutput: input.referenceOutput ?? null,
      metadata: input.metadata ?? {},
      requiredEnvironmentVariables: names(input.requiredEnvironmentVariables, 'required_environment_variables'),
      requiredSecretNames: names(input.requiredSecretNames, 'required_secret_names'),
      scorerTimeoutSec: timeout(input.scorerTimeoutSec) ?? DEFAULT_SCORER_TIMEOUT_SEC,
      validationType: validation(input.validationType),
      createTimeMs: now,
      updateTimeMs: now,
    };
    runnableByOthers(s);
    await this.store.insert(s);
    return s;
  }

  /** The account's own scenario or a public one; 404 otherwise. */
  async get(accountId: string, id: string): Promise<Scenario> {
    const s = await this.store.getById(id);
    if (!s || (s.accountId !== accountId && !s.isPublic)) throw ERRORS.notFound('scenario', id);
    return s;
  }

  /** Null/absent fields keep their value; given ones (empty included) replace it. Archived scenarios are read-only. */
  async update(accountId: string, id: string, input: ScenarioInput): Promise<Scenario> {
    const s = await this.own(accountId, id);
    if (s.status === 'archived') throw ERRORS.badState(`scenario ${id} is archived and cannot be updated`);
    if (input.name === '') throw ERRORS.invalid('name cannot be blank');
    const ic = input.inputContext;
    const next: Scenario = {
      ...s,
      name: input.name ?? s.name,
      inputContext: ic
        ? contextOf(
            ic.problem_statement ?? s.inputContext.problem_statement,
            ic.additional_context !== undefined ? ic.additional_context : s.inputContext.additional_context,
          )
        : s.inputContext,
      environment: input.environment != null ? environmentOf(input.environment) : s.environment,
      scoringFunctions:
        input.scoringFunctions != null
          ? await parseContract(input.scoringFunctions, async (t) => (await this.scorers.find(accountId, t)) !== undefined)
          : s.scoringFunctions,
      referenceOutput: input.referenceOutput != null ? input.referenceOutput || null : s.referenceOutput,
      metadata: input.metadata ?? s.metadata,
      requiredEnvironmentVariables:
        input.requiredEnvironmentVariables != null
          ? names(input.requiredEnvironmentVariables, 'required_environment_variables')
          : s.requiredEnvironmentVariables,
      requiredSecretNames: input.requiredSecretNames != null ? names(input.requiredSecretNames, 'required_secret_names') : s.requiredSecretNames,
      scorerTimeoutSec: timeout(input.scorerTimeoutSec) ?? s.scorerTimeoutSec,
      validationType: input.validationType != null ? validation(input.validationType) : s.validationType,
      updateTimeMs: Date.now(),
    };
    runnableByOthers(next);
    if (!(await this.store.replace(next))) throw ERRORS.badState(`scenario ${id} is archived and cannot be updated`);
    return next;
  }

  /** Archived scenarios leave the lists but stay readable (and their runs with them). Idempotent. */
  async archive(accountId: string, id: string): Promise<Scenario> {
    const s = await this.own(accountId, id);
    if (s.status !== 'archived') await this.store.archive(id, Date.now());
    return { ...s, status: 'archived' };
  }

  async list(accountId: string, filter: ScenarioFilter & { benchmarkId?: string }, page: PageQuery): Promise<Page<Scenario>> {
    const { benchmarkId, ...rest } = filter;
    if (benchmarkId !== undefined) {
      if (!this.benchmarkScenarioIds) throw ERRORS.invalid('benchmark_id: this server has no benchmarks to filter by');
      const ids = await this.benchmarkScenarioIds(accountId, benchmarkId);
      if (!ids) throw ERRORS.notFound('benchmark', benchmarkId);
      rest.ids = ids;
    }
    return this.store.list(accountId, rest, page);
  }

  listPublic(filter: ScenarioFilter, page: PageQuery): Promise<Page<Scenario>> {
    return this.store.list(null, filter, page);
  }

  private async own(accountId: string, id: string): Promise<Scenario> {
    const s = await this.store.getById(id);
    if (!s || s.accountId !== accountId) throw ERRORS.notFound('scenario', id);
    return s;
  }
}

/**
 * A public scenario is started by other accounts, and a snapshot is its own account's only (the devbox
 * resolver would answer them 404 "snapshot"): a public scenario's environment is a blueprint (a public one)
 * or the default image, never a snapshot.
 */
function runnableByOthers(s: Scenario): void {
  if (s.isPublic && s.environment?.snapshotId) {
    throw ERRORS.invalid(
      `environment_parameters.snapshot_id: public scenario ${s.name} would be started by other accounts, which cannot start from a snapshot of its owner`,
    );
  }
}

const contextOf = (problem: string, extra: unknown): Scenario['inputContext'] =>
  extra === undefined || extra === null ? { problem_statement: problem } : { problem_statement: problem, additional_context: extra };

function environmentOf(e: Partial<ScenarioEnvironment> | null | undefined): ScenarioEnvironment | null {
  if (!e) return null;
  if (e.blueprintId && e.snapshotId) throw ERRORS.invalid('environment_parameters: give blueprint_id or snapshot_id, not both');
  if (e.workingDirectory !== undefined && e.workingDirectory !== null && (e.workingDirectory === '' || e.workingDirectory.includes('\u0000'))) {
    throw ERRORS.invalid('environment_parameters.working_directory must be a non-empty path');
  }
  return {
    blueprintId: e.blueprintId ?? null,
    snapshotId: e.snapshotId ?? null,
    workingDirectory: e.workingDirectory ?? null,
    launchParameters: (e.launchParameters as LaunchParameters | null) ?? null,
  };
}

function names(list: string[] | null | undefined, field: string): string[] {
  for (const n of list ?? []) if (!ENV_NAME.test(n)) throw ERRORS.invalid(`${field}: "${n}" is not a valid environment variable name`);
  return [...new Set(list ?? [])];
}

function timeout(v: number | null | undefined): number | null {
  if (v === undefined || v === null) return null;
  if (!Number.isInteger(v) || v < 1 || v > MAX_SCORER_TIMEOUT_SEC)
    throw ERRORS.invalid(`scorer_timeout_sec must be an integer from 1 to ${MAX_SCORER_TIMEOUT_SEC}`);
  return v;
}

function validation(v: Scenario['validationType'] | '' | undefined): Scenario['validationType'] {
  if (v === undefined || v === null || v === '') return null;
  if (!VALIDATION_TYPES.includes(v)) throw ERRORS.invalid(`validation_type must be one of ${VALIDATION_TYPES.join(', ')}`);
  return v;
}
