import { Type } from 'typebox';
import { Body, Int, Metadata, Opt, OrNull, PageQuerySchema, pageSchema, StringEnum, StringMap, Text } from '../../../platform/http/schemas/common.js';
import { MAX_SCENARIOS } from '../benchmark-service.js';
import type { Benchmark, BenchmarkPatch, BenchmarkRun } from '../types.js';
import { RunProfileSchema } from './run-profile.js';

const Ids = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: MAX_SCENARIOS });
const Names = Type.Array(Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }), { maxItems: 256 });

const fields = {
  attribution: Opt(Text(4096)),
  description: Opt(Text(16384)),
  metadata: Opt(Metadata),
  required_environment_variables: Opt(Names),
  required_secret_names: Opt(Names),
  scenario_ids: Opt(Ids),
};
export const CreateBenchmarkBody = Body({ name: Text(256), ...fields });
export const UpdateBenchmarkBody = Body({ name: Opt(Text(256)), ...fields });
export const UpdateScenariosBody = Body({ scenarios_to_add: Opt(Ids), scenarios_to_remove: Opt(Ids) });

const NameSearch = {
  name: Type.Optional(Type.String({ maxLength: 256 })),
  search: Type.Optional(Type.String({ maxLength: 256 })),
};
export const BenchmarkListQuery = Type.Object({ ...PageQuerySchema.properties, ...NameSearch });

export const BenchmarkViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    metadata: StringMap,
    scenarioIds: Type.Array(Type.String()),
    status: StringEnum(['active', 'archived']),
    attribution: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    is_public: Type.Boolean(),
    required_environment_variables: Type.Array(Type.String()),
    required_secret_names: Type.Array(Type.String()),
  },
  { title: 'BenchmarkView', description: 'a benchmark: a set of scenarios' },
);
export const BenchmarkListView = pageSchema('benchmarks', BenchmarkViewSchema);

type Wire = {
  name?: string | null;
  attribution?: string | null;
  description?: string | null;
  metadata?: Record<string, string> | null;
  required_environment_variables?: string[] | null;
  required_secret_names?: string[] | null;
  scenario_ids?: string[] | null;
};

/** null on the wire keeps a field (update) or takes its default (create). */
export const toPatch = (b: Wire): BenchmarkPatch => ({
  name: b.name ?? undefined,
  attribution: b.attribution ?? undefined,
  description: b.description ?? undefined,
  metadata: b.metadata ?? undefined,
  requiredEnvironmentVariables: b.required_environment_variables ?? undefined,
  requiredSecretNames: b.required_secret_names ?? undefined,
  scenarioIds: b.scenario_ids ?? undefined,
});

export const toBenchmarkView = (b: Benchmark) => ({
  id: b.id,
  name: b.name,
  metadata: b.metadata,
  scenarioIds: b.scenarioIds,
  status: b.status,
  attribution: b.attribution ?? undefined,
  description: b.description ?? undefined,
  is_public: b.isPublic,
  required_environment_variables: b.requiredEnvironmentVariables,
  required_secret_names: b.requiredSecretNames,
});

export const RUN_STATES = ['running', 'canceled', 'completed', 'failed'] as const;

export const StartRunBody = Body({
  benchmark_id: Type.String({ minLength: 1, maxLength: 200 }),
  run_name: Opt(Text(256)),
  metadata: Opt(Metadata),
  runProfile: Opt(RunProfileSchema),
});

export const RunListQuery = Type.Object({
  ...PageQuerySchema.properties,
  ...NameSearch,
  benchmark_id: Type.Optional(Type.String({ maxLength: 200 })),
  state: Type.Optional(StringEnum([...RUN_STATES])),
});

export const BenchmarkRunViewSchema = Type.Object(
  {
    id: Type.String(),
    benchmark_id: OrNull(Type.String()),
    name: OrNull(Type.String()),
    metadata: StringMap,
    state: StringEnum([...RUN_STATES]),
    start_time_ms: Int,
    duration_ms: OrNull(Int),
    score: OrNull(Type.Number()),
    purpose: OrNull(Type.String()),
    environment_variables: StringMap,
    secrets_provided: StringMap,
  },
  { title: 'BenchmarkRunView', description: "a benchmark run: its state and its scenario runs' scores" },
);
export const BenchmarkRunListView = pageSchema('runs', BenchmarkRunViewSchema);

export const toRunView = (r: BenchmarkRun) => ({
  id: r.id,
  benchmark_id: r.benchmarkId,
  name: r.name,
  metadata: r.metadata,
  state: r.state,
  start_time_ms: r.startTimeMs,
  // While the run goes on: how long it has gone so far.
  duration_ms: (r.endTimeMs ?? Date.now()) - r.startTimeMs,
  score: r.score,
  purpose: r.profile.purpose,
  environment_variables: r.profile.envVars,
  secrets_provided: r.profile.secrets,
});
