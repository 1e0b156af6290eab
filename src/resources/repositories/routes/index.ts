import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import type { RepositoryService } from '../repository-service.js';
import type { UserManifestInput } from '../types.js';
import { repositoryOperations } from './operations.js';
import {
  CreateRepositoryBody,
  InspectBody,
  InspectionListView,
  InspectionViewSchema,
  ManifestViewSchema,
  RefreshBody,
  RepositoryListQuery,
  RepositoryListView,
  RepositoryViewSchema,
  toInspectionView,
  toManifestView,
  toRepositoryView,
  UserManifestBody,
} from './schemas.js';

/**
 * Repository connections and inspections, in the shape Runloop's SDK had up to 1.14 (`repositories`), and
 * add_user_manifest of the service interface. Runloop's restricted-key scopes have no repositories type:
 * the blueprints' governs them (an inspection is what an image is built from).
 */
export const repositoryRoutes = resourceModule('RESOURCE_TYPE_BLUEPRINTS', repositoryOperations, (app, opts: { repositories: RepositoryService }) => {
  const { repositories } = opts;

  app.post('/v1/repositories', { schema: { body: CreateRepositoryBody, response: replies(RepositoryViewSchema) } }, async (req) =>
    toRepositoryView(
      await repositories.create(req.principal.accountId, {
        owner: req.body.owner,
        name: req.body.name,
        blueprintId: req.body.blueprint_id,
        token: req.body.github_auth_token,
      }),
    ),
  );

  app.get('/v1/repositories', { schema: { querystring: RepositoryListQuery, response: replies(RepositoryListView) } }, async (req) => {
    const page = await repositories.list(req.principal.accountId, { owner: req.query.owner, name: req.query.name }, toPageQuery(req.query));
    return pageEnvelope('repositories', { ...page, items: page.items.map(toRepositoryView) });
  });

  app.get('/v1/repositories/:id', { schema: { params: IdParams, response: replies(RepositoryViewSchema) } }, async (req) =>
    toRepositoryView(await repositories.get(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/repositories/:id/delete', { schema: { params: IdParams, response: replies(RepositoryViewSchema) } }, async (req) =>
    toRepositoryView(await repositories.delete(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/repositories/:id/inspect', { schema: { params: IdParams, body: InspectBody, response: replies(InspectionViewSchema) } }, async (req) =>
    toInspectionView(await repositories.inspect(req.principal.accountId, req.params.id, { token: req.body?.github_auth_token })),
  );

  // Deprecated in the SDK (inspect replaces it); also changes the blueprint inspections run on.
  app.post('/v1/repositories/:id/refresh', { schema: { params: IdParams, body: RefreshBody, response: replies(InspectionViewSchema) } }, async (req) => {
    const b = req.body;
    return toInspectionView(await repositories.inspect(req.principal.accountId, req.params.id, { token: b?.github_auth_token, blueprintId: b?.blueprint_id }));
  });

  app.get('/v1/repositories/:id/inspections', { schema: { params: IdParams, response: replies(InspectionListView) } }, async (req) => ({
    inspections: (await repositories.inspections(req.principal.accountId, req.params.id)).map(toInspectionView),
  }));

  app.get('/v1/repositories/inspections/:id', { schema: { params: IdParams, response: replies(InspectionViewSchema) } }, async (req) =>
    toInspectionView(await repositories.inspection(req.principal.accountId, req.params.id)),
  );

  // {id} is the repository connection's id (service interface); the answer is the manifest now in force.
  app.post(
    '/v1/repositories/inspections/:id/add_user_manifest',
    { schema: { params: IdParams, body: UserManifestBody, response: replies(ManifestViewSchema) } },
    async (req) => toManifestView(await repositories.addUserManifest(req.principal.accountId, req.params.id, (req.body ?? {}) as Partial<UserManifestInput>)),
  );
});
