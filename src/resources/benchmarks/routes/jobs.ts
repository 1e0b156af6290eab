import { Type } from 'typebox';
import { ERRORS } from '../../../platform/errors.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, IdParams, Int, Opt, replies, StringEnum, Text } from '../../../platform/http/schemas/common.js';

/** Why every benchmark job is refused (the 400 says it, and README says it). */
export const JOBS_REFUSED =
  'benchmark jobs run an agent harness (job_agent or harbor specs) inside each scenario devbox, which this server does not run; ' +
  'start a benchmark run instead (POST /v1/benchmarks/start_run) and drive its scenario runs with your agent';

const JobViewSchema = Type.Object(
  { id: Type.String(), name: Type.String(), state: Type.String(), create_time_ms: Int },
  { description: 'BenchmarkJobView (none exist on this server)' },
);

/**
 * Benchmark jobs (beta): Runloop runs an agent of its own against each scenario. devboxd runs no agent, so
 * a create is a clear 400 (never a job that silently does nothing), the list is truthfully empty and a
 * retrieve is a 404.
 */
export function benchmarkJobRoutes(app: Api): void {
  const CreateBody = Body({ name: Opt(Text(256)), spec: Opt(Type.Object({ type: StringEnum(['harbor', 'benchmark', 'scenarios']) })) });
  app.post('/v1/benchmark_jobs', { schema: { body: Type.Optional(CreateBody), response: replies(JobViewSchema) } }, async () => {
    throw ERRORS.invalid(JOBS_REFUSED);
  });

  const ListQuery = Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 20 })),
    starting_after: Type.Optional(Type.String({ maxLength: 200 })),
    include_total_count: Type.Optional(Type.Boolean({ default: true })),
    name: Type.Optional(Type.String({ maxLength: 256 })),
    search: Type.Optional(Type.String({ maxLength: 256 })),
  });
  const ListView = Type.Object({ jobs: Type.Array(JobViewSchema), has_more: Type.Boolean(), total_count: Type.Optional(Int) });
  app.get('/v1/benchmark_jobs', { schema: { querystring: ListQuery, response: replies(ListView) } }, async (req) => ({
    jobs: [],
    has_more: false,
    total_count: req.query.include_total_count === false ? undefined : 0,
  }));

  app.get('/v1/benchmark_jobs/:id', { schema: { params: IdParams, response: replies(JobViewSchema) } }, async (req) => {
    throw ERRORS.notFound('benchmark job', req.params.id);
  });
}
