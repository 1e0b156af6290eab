import type { Api } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { ScenarioRouteOptions } from './options.js';
import { ScorerBody, ScorerList, ScorerListQuery, ScorerView, toScorerView } from './schemas.js';

/** Custom scorers (`/v1/scenarios/scorers`): a type name and the bash script that scores with it. */
export function scorerRoutes(app: Api, { scenarios }: ScenarioRouteOptions): void {
  const { scorers } = scenarios;
  app.post('/v1/scenarios/scorers', { schema: { body: ScorerBody, response: replies(ScorerView) } }, async (req) =>
    toScorerView(await scorers.create(req.principal.accountId, { type: req.body.type, bashScript: req.body.bash_script })),
  );
  app.get('/v1/scenarios/scorers', { schema: { querystring: ScorerListQuery, response: replies(ScorerList) } }, async (req) => {
    const page = await scorers.list(req.principal.accountId, toPageQuery(req.query), req.query.search);
    return pageEnvelope('scorers', { ...page, items: page.items.map(toScorerView) });
  });
  app.get('/v1/scenarios/scorers/:id', { schema: { params: IdParams, response: replies(ScorerView) } }, async (req) =>
    toScorerView(await scorers.get(req.principal.accountId, req.params.id)),
  );
  app.post('/v1/scenarios/scorers/:id', { schema: { params: IdParams, body: ScorerBody, response: replies(ScorerView) } }, async (req) =>
    toScorerView(await scorers.update(req.principal.accountId, req.params.id, { type: req.body.type, bashScript: req.body.bash_script })),
  );
}
