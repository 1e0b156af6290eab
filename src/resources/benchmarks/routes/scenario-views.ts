import { Type } from 'typebox';
import type { Api } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, PageQuerySchema, pageSchema, replies, StringEnum, toPageQuery } from '../../../platform/http/schemas/common.js';
import { RunView, ScenarioView, toRunView, toScenarioView } from '../../scenarios/index.js';
import type { ScenarioRunsPort } from '../ports.js';
import type { BenchmarkService } from '../benchmark-service.js';
import type { BenchmarkRunService } from '../run-service.js';

const ScenarioRunListQuery = Type.Object({
  ...PageQuerySchema.properties,
  search: Type.Optional(Type.String({ maxLength: 256 })),
  state: Type.Optional(StringEnum(['running', 'scoring', 'scored', 'completed', 'canceled', 'timeout', 'failed'])),
});

/**
 * The routes that answer in the scenarios module's views: a benchmark's scenario definitions and a
 * benchmark run's scenario runs (the same shapes `GET /v1/scenarios/...` answer).
 */
export function scenarioViewRoutes(app: Api, opts: { benchmarks: BenchmarkService; runs: BenchmarkRunService; scenarioRuns: () => ScenarioRunsPort }): void {
  const { benchmarks, runs } = opts;

  app.get(
    '/v1/benchmarks/:id/definitions',
    { schema: { params: IdParams, querystring: PageQuerySchema, response: replies(pageSchema('scenarios', ScenarioView)) } },
    async (req) => {
      const page = await benchmarks.definitions(req.principal.accountId, req.params.id, toPageQuery(req.query));
      return pageEnvelope('scenarios', { ...page, items: page.items.map(toScenarioView) });
    },
  );

  app.get(
    '/v1/benchmark_runs/:id/scenario_runs',
    { schema: { params: IdParams, querystring: ScenarioRunListQuery, response: replies(pageSchema('runs', RunView)) } },
    async (req) => {
      const run = await runs.get(req.principal.accountId, req.params.id);
      const filter = { benchmarkRunId: run.id, search: req.query.search, state: req.query.state };
      const page = await opts.scenarioRuns().list(req.principal.accountId, filter, toPageQuery(req.query));
      return pageEnvelope('runs', { ...page, items: page.items.map(toRunView) });
    },
  );
}
