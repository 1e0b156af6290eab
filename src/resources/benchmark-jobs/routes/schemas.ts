import { Type, type Static } from 'typebox';
import { ERRORS } from '../../../platform/errors.js';
import {
  Body,
  EnvironmentMap,
  Int,
  Nullable,
  Opt,
  OrNull,
  PageQuerySchema,
  pageSchema,
  SecretRefsMap,
  StringEnum,
  StringMap,
  Text,
} from '../../../platform/http/schemas/common.js';
import type { CreateJobSpec } from '../job-service.js';
import type { AgentConfigInput, OrchestratorInput } from '../spec.js';

const Id = Type.String({ minLength: 1, maxLength: 200 });
const SecretRefs = SecretRefsMap('environment variable name → secret id (or name)');
const Kwargs = Type.Unsafe<Record<string, string>>({
  type: 'object',
  propertyNames: { maxLength: 128 },
  additionalProperties: { type: 'string', maxLength: 100_000 },
  maxProperties: 32,
});

const AgentEnvironment = Body({ environment_variables: Opt(EnvironmentMap), secrets: Opt(SecretRefs) });
export const AgentConfigSchema = Body({
  name: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }),
  type: StringEnum(['job_agent']),
  agent_environment: Opt(AgentEnvironment),
  agent_id: Opt(Id),
  kwargs: Opt(Kwargs),
  model_name: Opt(Text(256)),
  timeout_seconds: Opt(Type.Number({ exclusiveMinimum: 0, maximum: 604_800 })),
});
export const OrchestratorSchema = Body({
  n_attempts: Opt(Type.Integer({ minimum: 0, maximum: 10 })),
  n_concurrent_trials: Opt(Type.Integer({ minimum: 1, maximum: 1000 })),
  quiet: Opt(Type.Boolean()),
  timeout_multiplier: Opt(Type.Number({ minimum: 0.01, maximum: 100 })),
});

/** One object for the three spec types: which fields a type needs is checked in `toSpec`, with messages naming them. */
const SpecSchema = Body({
  type: StringEnum(['harbor', 'benchmark', 'scenarios']),
  inline_yaml: Opt(Type.String({ minLength: 1, maxLength: 256 * 1024, pattern: '^[^\\u0000]*$' })),
  benchmark_id: Opt(Id),
  scenario_ids: Opt(Type.Array(Id, { maxItems: 5000 })),
  agent_configs: Opt(Type.Array(AgentConfigSchema, { maxItems: 64 })),
  orchestrator_config: Opt(OrchestratorSchema),
});
export const CreateJobBody = Body({ name: Opt(Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' })), spec: Opt(SpecSchema) });
export type CreateJobWire = Static<typeof CreateJobBody>;

export const JobListQuery = Type.Object({
  ...PageQuerySchema.properties,
  name: Type.Optional(Type.String({ maxLength: 256 })),
  search: Type.Optional(Type.String({ maxLength: 256 })),
});

type AgentWire = Static<typeof AgentConfigSchema>;
const toAgent = (a: AgentWire): AgentConfigInput => ({
  name: a.name,
  agentId: a.agent_id ?? null,
  modelName: a.model_name ?? null,
  timeoutSeconds: a.timeout_seconds ?? null,
  kwargs: a.kwargs ?? {},
  environmentVariables: a.agent_environment?.environment_variables ?? {},
  secrets: a.agent_environment?.secrets ?? {},
});
const toOrchestrator = (o: Static<typeof OrchestratorSchema> | null | undefined): OrchestratorInput | null =>
  o ? { nConcurrentTrials: o.n_concurrent_trials, nAttempts: o.n_attempts, timeoutMultiplier: o.timeout_multiplier, quiet: o.quiet } : null;

/** The spec in domain terms; a field of another type's spec, or a missing one, is a 400 naming it. */
export function toSpec(body: CreateJobWire | undefined): CreateJobSpec {
  const s = body?.spec;
  if (!s) throw ERRORS.invalid('spec is required: {type: "benchmark" | "scenarios" | "harbor", ...}');
  const given = (Object.keys(s) as (keyof typeof s)[]).filter((k) => s[k] !== undefined && s[k] !== null && k !== 'type');
  const fields = {
    harbor: ['inline_yaml'],
    benchmark: ['benchmark_id', 'agent_configs', 'orchestrator_config'],
    scenarios: ['scenario_ids', 'agent_configs', 'orchestrator_config'],
  };
  const stray = given.find((k) => !fields[s.type].includes(k));
  if (stray) throw ERRORS.invalid(`spec.${stray} is not a field of a ${s.type} spec`);
  if (s.type === 'harbor') return { type: 'harbor', inlineYaml: required(s.inline_yaml, 'spec.inline_yaml') };
  const agents = required(s.agent_configs, 'spec.agent_configs').map(toAgent);
  const orchestrator = toOrchestrator(s.orchestrator_config);
  if (s.type === 'benchmark') return { type: 'benchmark', benchmarkId: required(s.benchmark_id, 'spec.benchmark_id'), agents, orchestrator };
  return { type: 'scenarios', scenarioIds: required(s.scenario_ids, 'spec.scenario_ids'), agents, orchestrator };
}

function required<T>(v: T | null | undefined, field: string): T {
  if (v === undefined || v === null) throw ERRORS.invalid(`${field} is required`);
  return v;
}

const AgentConfigView = Type.Object({
  name: Type.String(),
  type: Type.String(),
  agent_id: OrNull(Type.String()),
  model_name: OrNull(Type.String()),
  timeout_seconds: OrNull(Type.Number()),
  kwargs: StringMap,
  agent_environment: Type.Object({ environment_variables: StringMap, secrets: StringMap }),
});
const OrchestratorView = Type.Object({ n_attempts: Int, n_concurrent_trials: Int, quiet: Type.Boolean(), timeout_multiplier: Type.Number() });
const FailureView = Type.Object({ exception_type: Type.String(), exception_message: Type.String() });
const ScenarioOutcomeView = Type.Object({
  scenario_definition_id: Type.String(),
  scenario_name: Type.String(),
  state: StringEnum(['COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELED']),
  scenario_run_id: OrNull(Type.String()),
  score: OrNull(Type.Number()),
  duration_ms: OrNull(Int),
  failure_reason: Nullable(FailureView),
});
const OutcomeView = Type.Object({
  agent_name: Type.String(),
  benchmark_run_id: Type.String(),
  model_name: OrNull(Type.String()),
  n_completed: Int,
  n_failed: Int,
  n_timeout: Int,
  average_score: OrNull(Type.Number()),
  duration_ms: OrNull(Int),
  scenario_outcomes: Type.Array(ScenarioOutcomeView),
});
const InProgressView = Type.Object({
  benchmark_run_id: Type.String(),
  start_time_ms: Int,
  state: Type.String(),
  duration_ms: OrNull(Int),
  agent_config: AgentConfigView,
});
const SourceView = Type.Object({
  type: StringEnum(['harbor', 'benchmark', 'scenarios']),
  inline_yaml: Type.Optional(Type.String()),
  benchmark_id: Type.Optional(Type.String()),
  benchmark_name: Type.Optional(OrNull(Type.String())),
  scenario_ids: Type.Optional(Type.Array(Type.String())),
});

export const JobViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    state: StringEnum(['initializing', 'queued', 'running', 'completed', 'failed', 'cancelled', 'timeout']),
    create_time_ms: Int,
    failure_reason: OrNull(Type.String()),
    job_source: SourceView,
    job_spec: Type.Object({ agent_configs: Type.Array(AgentConfigView), scenario_ids: Type.Array(Type.String()), orchestrator_config: OrchestratorView }),
    in_progress_runs: Type.Array(InProgressView),
    benchmark_outcomes: Type.Array(OutcomeView),
  },
  { title: 'BenchmarkJobView', description: 'a benchmark job: its spec, state and the outcomes so far' },
);
export const JobListView = pageSchema('jobs', JobViewSchema);
