import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { AgentService } from '../agent-service.js';
import type { AgentListFilter } from '../types.js';
import { agentOperations } from './operations.js';
import { AgentListQuery, AgentListView, AgentViewSchema, CreateAgentBody, DevboxCountsView, PublicAgentListQuery, toView } from './schemas.js';

export interface AgentRouteOptions {
  agents: AgentService;
}

const filterOf = (q: { name?: string; search?: string; version?: string; is_public?: boolean }): AgentListFilter => ({
  isPublic: q.is_public,
  name: q.name || undefined,
  search: q.search || undefined,
  version: q.version || undefined,
});

/** Agents (`/v1/agents`), under RESOURCE_TYPE_AGENTS; mounting one into a box is part of the devbox create. */
export const agentRoutes = resourceModule('RESOURCE_TYPE_AGENTS', agentOperations, (app, { agents }: AgentRouteOptions) => {
  app.post('/v1/agents', { schema: { body: CreateAgentBody, response: replies(AgentViewSchema) } }, async (req) =>
    toView(await agents.create(req.principal.accountId, req.body)),
  );

  app.get('/v1/agents', { schema: { querystring: AgentListQuery, response: replies(AgentListView) } }, async (req) => {
    const page = await agents.list(req.principal.accountId, filterOf(req.query), toPageQuery(req.query));
    return pageEnvelope('agents', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/agents/list_public', { schema: { querystring: PublicAgentListQuery, response: replies(AgentListView) } }, async (req) => {
    const page = await agents.listPublic(filterOf(req.query), toPageQuery(req.query));
    return pageEnvelope('agents', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/agents/devbox_counts', { schema: { response: replies(DevboxCountsView) } }, async (req) => {
    const { counts, total } = await agents.devboxCounts(req.principal.accountId);
    return { counts, total_count: total };
  });

  app.get('/v1/agents/:id', { schema: { params: IdParams, response: replies(AgentViewSchema) } }, async (req) =>
    toView(await agents.get(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/agents/:id/delete', { schema: { params: IdParams, response: replies(AgentViewSchema) } }, async (req) =>
    toView(await agents.delete(req.principal.accountId, req.params.id)),
  );
});
