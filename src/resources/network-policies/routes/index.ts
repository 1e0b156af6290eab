import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { NetworkPolicyService } from '../network-policy-service.js';
import type { NetworkPolicy } from '../types.js';
import { networkPolicyOperations } from './operations.js';
import { CreatePolicyBody, PolicyListQuery, PolicyListView, PolicyViewSchema, toPatch, toView, UpdatePolicyBody } from './schemas.js';

/**
 * Network policies (`/v1/network-policies`). Runloop's restricted-key scopes have no type of their own for
 * them; they govern what devboxes reach, so RESOURCE_TYPE_DEVBOXES does (read to list and retrieve, write to
 * change).
 */
export const networkPolicyRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', networkPolicyOperations, (app, opts: { policies: NetworkPolicyService }) => {
  const { policies } = opts;
  const view = (p: NetworkPolicy) => toView(p, policies.closedCidrs(p.egress));

  app.post('/v1/network-policies', { schema: { body: CreatePolicyBody, response: replies(PolicyViewSchema) } }, async (req) =>
    view(await policies.create(req.principal.accountId, toPatch(req.body))),
  );

  app.get('/v1/network-policies', { schema: { querystring: PolicyListQuery, response: replies(PolicyListView) } }, async (req) => {
    const { id, name, search } = req.query;
    const page = await policies.list(req.principal.accountId, { id, name, search }, toPageQuery(req.query));
    return pageEnvelope('network_policies', { ...page, items: page.items.map(view) });
  });

  app.get('/v1/network-policies/:id', { schema: { params: IdParams, response: replies(PolicyViewSchema) } }, async (req) =>
    view(await policies.get(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/network-policies/:id', { schema: { params: IdParams, body: UpdatePolicyBody, response: replies(PolicyViewSchema) } }, async (req) =>
    view(await policies.update(req.principal.accountId, req.params.id, toPatch(req.body))),
  );

  app.post('/v1/network-policies/:id/delete', { schema: { params: IdParams, response: replies(PolicyViewSchema) } }, async (req) =>
    view(await policies.delete(req.principal.accountId, req.params.id)),
  );
});
