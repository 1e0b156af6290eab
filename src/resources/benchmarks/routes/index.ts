import { Type } from 'typebox';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { BenchmarkService } from '../benchmark-service.js';
import type { BenchmarkRunService } from '../run-service.js';
import { benchmarkOperations } from './operations.js';
import { toRunProfile } from './run-profile.js';
import {
  BenchmarkListQuery,
  BenchmarkListView,
  BenchmarkRunListView,
  BenchmarkRunViewSchema,
  BenchmarkViewSchema,
  CreateBenchmarkBody,
  RunListQuery,
  StartRunBody,
  toBenchmarkView,
  toPatch,
  toRunView,
  UpdateBenchmarkBody,
  UpdateScenariosBody,
} from './schemas.js';
import type { ScenarioRunsPort } from '../ports.js';
import { scenarioViewRoutes } from './scenario-views.js';

export interface BenchmarkRouteOptions {
  benchmarks: BenchmarkService;
  runs: BenchmarkRunService;
  scenarioRuns: () => ScenarioRunsPort;
}

/** Benchmarks (`/v1/benchmarks`) and their runs (`/v1/benchmark_runs`): RESOURCE_TYPE_BENCHMARKS. */
export const benchmarkRoutes = resourceModule('RESOURCE_TYPE_BENCHMARKS', benchmarkOperations, async (app, opts: BenchmarkRouteOptions) => {
  const { benchmarks, runs } = opts;
  const BenchmarkReply = { schema: { params: IdParams, response: replies(BenchmarkViewSchema) } };

  app.post('/v1/benchmarks', { schema: { body: CreateBenchmarkBody, response: replies(BenchmarkViewSchema) } }, async (req) =>
    toBenchmarkView(await benchmarks.create(req.principal.accountId, toPatch(req.body))),
  );

  app.get('/v1/benchmarks', { schema: { querystring: BenchmarkListQuery, response: replies(BenchmarkListView) } }, async (req) => {
    const page = await benchmarks.list(req.principal.accountId, { name: req.query.name, search: req.query.search }, toPageQuery(req.query));
    return pageEnvelope('benchmarks', { ...page, items: page.items.map(toBenchmarkView) });
  });

  app.get('/v1/benchmarks/list_public', { schema: { querystring: BenchmarkListQuery, response: replies(BenchmarkListView) } }, async (req) => {
    const page = await benchmarks.listPublic({ name: req.query.name, search: req.query.search }, toPageQuery(req.query));
    return pageEnvelope('benchmarks', { ...page, items: page.items.map(toBenchmarkView) });
  });

  app.get('/v1/benchmarks/:id', BenchmarkReply, async (req) => toBenchmarkView(await benchmarks.get(req.principal.accountId, req.params.id)));

  app.post(
    '/v1/benchmarks/:id',
    { schema: { params: IdParams, body: Type.Optional(UpdateBenchmarkBody), response: replies(BenchmarkViewSchema) } },
    async (req) => toBenchmarkView(await benchmarks.update(req.principal.accountId, req.params.id, toPatch(req.body ?? {}))),
  );

  app.post(
    '/v1/benchmarks/:id/scenarios',
    { schema: { params: IdParams, body: Type.Optional(UpdateScenariosBody), response: replies(BenchmarkViewSchema) } },
    async (req) =>
      toBenchmarkView(
        await benchmarks.updateScenarios(req.principal.accountId, req.params.id, req.body?.scenarios_to_add ?? [], req.body?.scenarios_to_remove ?? []),
      ),
  );

  app.post('/v1/benchmarks/start_run', { schema: { body: StartRunBody, response: replies(BenchmarkRunViewSchema) } }, async (req) => {
    const b = req.body;
    const run = await runs.start(req.principal.accountId, {
      benchmarkId: b.benchmark_id,
      runName: b.run_name ?? null,
      metadata: b.metadata ?? {},
      profile: toRunProfile(b.runProfile),
    });
    return toRunView(run);
  });

  app.get('/v1/benchmark_runs', { schema: { querystring: RunListQuery, response: replies(BenchmarkRunListView) } }, async (req) => {
    const { benchmark_id, name, search, state } = req.query;
    const page = await runs.list(req.principal.accountId, { benchmarkId: benchmark_id, name, search, state }, toPageQuery(req.query));
    return pageEnvelope('runs', { ...page, items: page.items.map(toRunView) });
  });

  const RunReply = { schema: { params: IdParams, response: replies(BenchmarkRunViewSchema) } };
  app.get('/v1/benchmark_runs/:id', RunReply, async (req) => toRunView(await runs.get(req.principal.accountId, req.params.id)));
  app.post('/v1/benchmark_runs/:id/cancel', RunReply, async (req) => toRunView(await runs.cancel(req.principal.accountId, req.params.id)));
  app.post('/v1/benchmark_runs/:id/complete', RunReply, async (req) => toRunView(await runs.complete(req.principal.accountId, req.params.id)));

  scenarioViewRoutes(app, opts);
});
