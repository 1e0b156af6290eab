import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { BlueprintService } from '../blueprint-service.js';
import { blueprintOperations } from './operations.js';
import {
  BlueprintListQuery,
  BlueprintListView,
  BlueprintViewSchema,
  BuildBody,
  KeysView,
  LogsView,
  MetadataKeyParams,
  PreviewView,
  toLogs,
  toParams,
  toView,
  ValuesView,
} from './schemas.js';

/** Blueprints (`/v1/blueprints`): builds, their logs, and the public catalogue. */
export const blueprintRoutes = resourceModule('RESOURCE_TYPE_BLUEPRINTS', blueprintOperations, (app, opts: { blueprints: BlueprintService }) => {
  const { blueprints } = opts;

  app.post('/v1/blueprints', { schema: { body: BuildBody, response: replies(BlueprintViewSchema) } }, async (req) =>
    toView(await blueprints.create(req.principal.accountId, toParams(req.body))),
  );

  app.post('/v1/blueprints/preview', { schema: { body: BuildBody, response: replies(PreviewView) } }, async (req) => ({
    dockerfile: await blueprints.preview(req.principal.accountId, toParams(req.body)),
  }));

  app.get('/v1/blueprints', { schema: { querystring: BlueprintListQuery, response: replies(BlueprintListView) } }, async (req) => {
    const page = await blueprints.list(req.principal.accountId, { name: req.query.name, status: req.query.status }, toPageQuery(req.query));
    return pageEnvelope('blueprints', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/blueprints/list_public', { schema: { querystring: BlueprintListQuery, response: replies(BlueprintListView) } }, async (req) => {
    const page = await blueprints.listPublic({ name: req.query.name, status: req.query.status }, toPageQuery(req.query));
    return pageEnvelope('blueprints', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/blueprints/public/metadata/keys', { schema: { response: replies(KeysView) } }, async () => ({ keys: await blueprints.publicKeys() }));

  app.get('/v1/blueprints/public/metadata/keys/:key/values', { schema: { params: MetadataKeyParams, response: replies(ValuesView) } }, async (req) => ({
    key: req.params.key,
    values: await blueprints.publicValues(req.params.key),
  }));

  app.get('/v1/blueprints/:id', { schema: { params: IdParams, response: replies(BlueprintViewSchema) } }, async (req) =>
    toView(await blueprints.get(req.principal.accountId, req.params.id)),
  );

  app.get('/v1/blueprints/:id/logs', { schema: { params: IdParams, response: replies(LogsView) } }, async (req) =>
    toLogs(req.params.id, await blueprints.logs(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/blueprints/:id/delete', { schema: { params: IdParams, response: replies(BlueprintViewSchema) } }, async (req) =>
    toView(await blueprints.delete(req.principal.accountId, req.params.id)),
  );
});
