import type { Api } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { ScenarioRouteOptions } from './options.js';
import {
  CreateScenarioBody,
  PublicScenarioListQuery,
  ScenarioList,
  ScenarioListQuery,
  ScenarioView,
  toScenarioInput,
  toScenarioView,
  UpdateScenarioBody,
} from './schemas.js';

/** Scenarios: create, read (own and public), update, archive, list, list_public. */
export function scenarioRoutes(app: Api, { scenarios: m }: ScenarioRouteOptions): void {
  const { scenarios } = m;
  app.post('/v1/scenarios', { schema: { body: CreateScenarioBody, response: replies(ScenarioView) } }, async (req) =>
    toScenarioView(await scenarios.create(req.principal.accountId, toScenarioInput(req.body))),
  );
  app.get('/v1/scenarios', { schema: { querystring: ScenarioListQuery, response: replies(ScenarioList) } }, async (req) => {
    const q = req.query;
    const page = await scenarios.list(
      req.principal.accountId,
      { name: q.name, search: q.search, validationType: q.validation_type, benchmarkId: q.benchmark_id },
      toPageQuery(q),
    );
    return pageEnvelope('scenarios', { ...page, items: page.items.map(toScenarioView) });
  });
  app.get('/v1/scenarios/list_public', { schema: { querystring: PublicScenarioListQuery, response: replies(ScenarioList) } }, async (req) => {
    const page = await scenarios.listPublic({ name: req.query.name, search: req.query.search }, toPageQuery(req.query));
    return pageEnvelope('scenarios', { ...page, items: page.items.map(toScenarioView) });
  });
  app.get('/v1/scenarios/:id', { schema: { params: IdParams, response: replies(ScenarioView) } }, async (req) =>
    toScenarioView(await scenarios.get(req.principal.accountId, req.params.id)),
  );
  app.post('/v1/scenarios/:id', { schema: { params: IdParams, body: UpdateScenarioBody, response: replies(ScenarioView) } }, async (req) =>
    toScenarioView(await scenarios.update(req.principal.accountId, req.params.id, toScenarioInput(req.body))),
  );
  app.post('/v1/scenarios/:id/archive', { schema: { params: IdParams, response: replies(ScenarioView) } }, async (req) =>
    toScenarioView(await scenarios.archive(req.principal.accountId, req.params.id)),
  );
}
