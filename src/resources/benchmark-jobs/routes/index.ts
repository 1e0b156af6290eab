import { Type } from 'typebox';
import { type Api, resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { BenchmarkJobService } from '../job-service.js';
import { benchmarkJobOperations } from './operations.js';
import { CreateJobBody, JobListQuery, JobListView, JobViewSchema, toSpec } from './schemas.js';
import { toJobView } from './views.js';

export interface BenchmarkJobRouteOptions {
  jobs: BenchmarkJobService;
}

/** Benchmark jobs (`/v1/benchmark_jobs`, beta): RESOURCE_TYPE_BENCHMARKS, like benchmarks and their runs. */
export const benchmarkJobRoutes = resourceModule('RESOURCE_TYPE_BENCHMARKS', benchmarkJobOperations, (app: Api, opts: BenchmarkJobRouteOptions) => {
  const { jobs } = opts;

  app.post('/v1/benchmark_jobs', { schema: { body: Type.Optional(CreateJobBody), response: replies(JobViewSchema) } }, async (req) => {
    const job = await jobs.create(req.principal.accountId, req.body?.name ?? null, toSpec(req.body));
    return toJobView(await jobs.details(job));
  });

  app.get('/v1/benchmark_jobs', { schema: { querystring: JobListQuery, response: replies(JobListView) } }, async (req) => {
    const page = await jobs.list(req.principal.accountId, { name: req.query.name, search: req.query.search }, toPageQuery(req.query));
    const items = await Promise.all(page.items.map(async (j) => toJobView(await jobs.details(j))));
    return pageEnvelope('jobs', { ...page, items });
  });

  app.get('/v1/benchmark_jobs/:id', { schema: { params: IdParams, response: replies(JobViewSchema) } }, async (req) =>
    toJobView(await jobs.details(await jobs.get(req.principal.accountId, req.params.id))),
  );
});
