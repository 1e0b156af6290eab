import { ERRORS } from '../../../platform/errors.js';
import { Type, type Static } from 'typebox';
import {
  ArgString,
  Body,
  EnvironmentMap,
  Int,
  Metadata,
  Nullable,
  Opt,
  OrNull,
  PageQuerySchema,
  pageSchema,
  StringEnum,
  StringMap,
  Text,
} from '../../../platform/http/schemas/common.js';
import { LaunchParametersSchema, MountsSchema } from '../../../platform/http/schemas/shared.js';
import { refuseUnsupported, type CreateBody } from '../../devboxes/index.js';
import { SCRIPT_MAX_BYTES, type CustomScorer } from '../scorer-service.js';
import type { Scenario, ScenarioRun } from '../types.js';

const NAME = 256;
const REFERENCE_OUTPUT_MAX = 256 * 1024;
const VALIDATION = ['UNSPECIFIED', 'FORWARD', 'REVERSE', 'EVALUATION'];
const Names = Type.Array(Text(256), { maxItems: 100 });

/* Scorers */
export const ScorerBody = Body({ type: Text(128), bash_script: ArgString({ maxLength: SCRIPT_MAX_BYTES }) });
export const ScorerView = Type.Object(
  { id: Type.String(), type: Type.String(), bash_script: Type.String() },
  { title: 'ScorerView', description: 'a custom scorer' },
);
export const ScorerList = pageSchema('scorers', ScorerView);
export const ScorerListQuery = Type.Object({ ...PageQuerySchema.properties, search: Type.Optional(Text(256)) });
export const toScorerView = (s: CustomScorer) => ({ id: s.id, type: s.type, bash_script: s.bashScript });

/* Scenarios */
const InputContext = Type.Object({ problem_statement: Text(256 * 1024), additional_context: Type.Optional(Type.Unknown()) }, { additionalProperties: false });
const InputContextUpdate = Type.Object(
  { problem_statement: Opt(Text(256 * 1024)), additional_context: Type.Optional(Type.Unknown()) },
  { additionalProperties: false },
);
const Environment = Type.Object(
  { blueprint_id: Opt(Text(200)), snapshot_id: Opt(Text(200)), working_directory: Opt(Text(4096)), launch_parameters: Opt(LaunchParametersSchema) },
  { additionalProperties: false },
);
/** Scoring functions are checked by the service (contract.ts), whose messages name the function and field. */
const ScoringContract = Type.Object({ scoring_function_parameters: Type.Array(Type.Unknown(), { maxItems: 100 }) }, { additionalProperties: false });
const ScoringContractUpdate = Type.Object({ scoring_function_parameters: Opt(Type.Array(Type.Unknown(), { maxItems: 100 })) }, { additionalProperties: false });

const scenarioFields = {
  environment_parameters: Opt(Environment),
  metadata: Opt(Metadata),
  reference_output: Opt(Text(REFERENCE_OUTPUT_MAX)),
  required_environment_variables: Opt(Names),
  required_secret_names: Opt(Names),
  scorer_timeout_sec: Opt(Type.Integer()),
  validation_type: Opt(StringEnum([...VALIDATION, ''], { description: 'an empty string clears it (on update)' })),
};
export const CreateScenarioBody = Body({ name: Text(NAME), input_context: InputContext, scoring_contract: ScoringContract, ...scenarioFields });
export const UpdateScenarioBody = Body({
  name: Opt(Text(NAME)),
  input_context: Opt(InputContextUpdate),
  scoring_contract: Opt(ScoringContractUpdate),
  ...scenarioFields,
});
export type ScenarioBody = Static<typeof UpdateScenarioBody>;

export const ScenarioListQuery = Type.Object({
  ...PageQuerySchema.properties,
  name: Type.Optional(Text(NAME)),
  search: Type.Optional(Text(NAME)),
  benchmark_id: Type.Optional(Text(200)),
  validation_type: Type.Optional(Text(64)),
});
export const PublicScenarioListQuery = Type.Object({ ...PageQuerySchema.properties, name: Type.Optional(Text(NAME)), search: Type.Optional(Text(NAME)) });

/** A body's launch parameters: what the devbox create would refuse is refused here, before anything is stored. */
export function refuseLaunch(lp: unknown, mounts?: unknown): void {
  refuseUnsupported({ launch_parameters: lp ?? undefined, mounts: mounts ?? undefined } as CreateBody);
}

export const toScenarioInput = (b: ScenarioBody) => {
  const env = b.environment_parameters;
  if (env) refuseLaunch(env.launch_parameters);
  // Services are a blueprint's: a box from no blueprint has none to start (the devbox create would refuse it at start_run).
  if (env?.launch_parameters?.required_services?.length && !env.blueprint_id) {
    throw ERRORS.invalid(
      'environment_parameters.launch_parameters.required_services needs environment_parameters.blueprint_id: services are defined by a blueprint',
    );
  }
  return {
    name: b.name,
    inputContext: b.input_context,
    environment: env && {
      blueprintId: env.blueprint_id,
      snapshotId: env.snapshot_id,
      workingDirectory: env.working_directory,
      launchParameters: env.launch_parameters,
    },
    scoringFunctions: b.scoring_contract?.scoring_function_parameters,
    referenceOutput: b.reference_output,
    metadata: b.metadata,
    requiredEnvironmentVariables: b.required_environment_variables,
    requiredSecretNames: b.required_secret_names,
    scorerTimeoutSec: b.scorer_timeout_sec,
    validationType: (b.validation_type === '' ? '' : b.validation_type) as Scenario['validationType'] | '',
  };
};

const Loose = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });
export const ScenarioView = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    status: StringEnum(['active', 'archived']),
    is_public: Type.Boolean(),
    input_context: Loose,
    environment: Nullable(Loose),
    scoring_contract: Type.Object({ scoring_function_parameters: Type.Array(Type.Unsafe<unknown>({ type: 'object', additionalProperties: true })) }),
    reference_output: OrNull(Type.String()),
    metadata: StringMap,
    required_environment_variables: Type.Array(Type.String()),
    required_secret_names: Type.Array(Type.String()),
    scorer_timeout_sec: Int,
    validation_type: OrNull(StringEnum(VALIDATION)),
  },
  { title: 'ScenarioView', description: 'a scenario' },
);
export const ScenarioList = pageSchema('scenarios', ScenarioView);

export const toScenarioView = (s: Scenario) => ({
  id: s.id,
  name: s.name,
  status: s.status,
  is_public: s.isPublic,
  input_context: s.inputContext,
  environment: s.environment && {
    blueprint_id: s.environment.blueprintId,
    snapshot_id: s.environment.snapshotId,
    working_directory: s.environment.workingDirectory,
    launch_parameters: s.environment.launchParameters,
  },
  scoring_contract: { scoring_function_parameters: s.scoringFunctions },
  reference_output: s.referenceOutput,
  metadata: s.metadata,
  required_environment_variables: s.requiredEnvironmentVariables,
  required_secret_names: s.requiredSecretNames,
  scorer_timeout_sec: s.scorerTimeoutSec,
  validation_type: s.validationType,
});

/* Runs */
export const RunProfile = Type.Object(
  {
    purpose: Opt(Text(1024)),
    envVars: Opt(EnvironmentMap),
    secrets: Opt(Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 }), Text(256))),
    launchParameters: Opt(LaunchParametersSchema),
    mounts: Opt(MountsSchema),
  },
  { additionalProperties: false },
);
export const StartRunBody = Body({
  scenario_id: Text(200),
  benchmark_run_id: Opt(Text(200)),
  metadata: Opt(Metadata),
  run_name: Opt(Text(NAME)),
  runProfile: Opt(RunProfile),
});
/** Runs carry their scoring output (up to 20 functions × 8 KiB): a page holds at most 200 of them. */
export const RunListQuery = Type.Object({
  ...PageQuerySchema.properties,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 20 })),
  benchmark_run_id: Type.Optional(Text(200)),
  scenario_id: Type.Optional(Text(200)),
  name: Type.Optional(Text(NAME)),
  search: Type.Optional(Text(NAME)),
  state: Type.Optional(StringEnum(['running', 'scoring', 'scored', 'completed', 'canceled', 'timeout', 'failed'])),
});

const FunctionResult = Type.Object({
  scoring_function_name: Type.String(),
  score: Type.Number(),
  output: Type.String(),
  state: StringEnum(['unknown', 'complete', 'error']),
});
export const RunView = Type.Object(
  {
    id: Type.String(),
    scenario_id: Type.String(),
    devbox_id: Type.String(),
    state: StringEnum(['running', 'scoring', 'scored', 'completed', 'canceled', 'timeout', 'failed']),
    metadata: StringMap,
    name: OrNull(Type.String()),
    benchmark_run_id: OrNull(Type.String()),
    purpose: OrNull(Type.String()),
    environment_variables: StringMap,
    secrets_provided: StringMap,
    scoring_contract_result: Nullable(Type.Object({ score: Type.Number(), scoring_function_results: Type.Array(FunctionResult) })),
    start_time_ms: Int,
    duration_ms: Int,
  },
  { title: 'ScenarioRunView', description: 'a scenario run' },
);
export const RunList = pageSchema('runs', RunView);

export const toRunView = (r: ScenarioRun) => ({
  id: r.id,
  scenario_id: r.scenarioId,
  devbox_id: r.devboxId,
  state: r.state,
  metadata: r.metadata,
  name: r.name,
  benchmark_run_id: r.benchmarkRunId,
  purpose: r.purpose,
  environment_variables: r.environmentVariables,
  secrets_provided: r.secretsProvided,
  scoring_contract_result: r.scoringResult && {
    score: r.scoringResult.score,
    scoring_function_results: r.scoringResult.functions.map((f) => ({ scoring_function_name: f.name, score: f.score, output: f.output, state: f.state })),
  },
  start_time_ms: r.startTimeMs,
  duration_ms: (r.endTimeMs ?? Date.now()) - r.startTimeMs,
});
