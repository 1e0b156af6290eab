import { resourceModule } from '../../../platform/http/resource-module.js';
import { pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { SecretService } from '../secret-service.js';
import { secretOperations } from './operations.js';
import { CreateSecretBody, SecretListQuery, SecretListView, SecretNameParams, SecretViewSchema, toView, UpdateSecretBody } from './schemas.js';

/**
 * Secrets, addressed by name like Runloop (`/v1/secrets/{name}`). Runloop's restricted-key scopes have no
 * secrets type: RESOURCE_TYPE_ACCOUNT governs them (read to list and retrieve, write to change).
 */
export const secretRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', secretOperations, (app, opts: { secrets: SecretService }) => {
  const { secrets } = opts;

  app.post('/v1/secrets', { schema: { body: CreateSecretBody, response: replies(SecretViewSchema) } }, async (req) =>
    toView(await secrets.create(req.principal.accountId, req.body.name, req.body.value)),
  );

  app.get('/v1/secrets', { schema: { querystring: SecretListQuery, response: replies(SecretListView) } }, async (req) => {
    const page = await secrets.list(req.principal.accountId, toPageQuery(req.query));
    return pageEnvelope('secrets', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/secrets/:name', { schema: { params: SecretNameParams, response: replies(SecretViewSchema) } }, async (req) =>
    toView(await secrets.get(req.principal.accountId, req.params.name)),
  );

  app.post('/v1/secrets/:name', { schema: { params: SecretNameParams, body: UpdateSecretBody, response: replies(SecretViewSchema) } }, async (req) =>
    toView(await secrets.update(req.principal.accountId, req.params.name, req.body.value)),
  );

  app.post('/v1/secrets/:name/delete', { schema: { params: SecretNameParams, response: replies(SecretViewSchema) } }, async (req) =>
    toView(await secrets.delete(req.principal.accountId, req.params.name)),
  );
});
