import type { FastifyRequest } from 'fastify';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { IdParams, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import { DOWNLOAD_URL_SECONDS, type ObjectService } from '../object-service.js';
import type { ObjectListFilter, StoredObject } from '../types.js';
import { objectOperations } from './operations.js';
import { presignedRoutes } from './presigned.js';
import { CreateObjectBody, DownloadQuery, DownloadUrlView, ObjectListQuery, ObjectListView, ObjectViewSchema, toView } from './schemas.js';

export interface ObjectRouteOptions {
  objects: ObjectService;
}

/**
 * The base presigned URLs are built on when DEVBOXD_PUBLIC_URL is unset: the scheme and host the client
 * used (a reverse proxy that terminates TLS says `X-Forwarded-Proto: https`).
 */
export function requestBase(req: FastifyRequest): string {
  const forwarded = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]!
    .trim()
    .toLowerCase();
  const proto = forwarded === 'https' || forwarded === 'http' ? forwarded : 'http';
  return `${proto}://${req.host}`;
}

const filterOf = (q: {
  content_type?: ObjectListFilter['contentType'];
  name?: string;
  search?: string;
  state?: ObjectListFilter['state'];
}): ObjectListFilter => ({
  contentType: q.content_type,
  name: q.name || undefined,
  search: q.search || undefined,
  state: q.state,
});

/** Storage objects (`/v1/objects`), under RESOURCE_TYPE_OBJECTS; their presigned URLs need no key (presigned.ts). */
export const objectRoutes = resourceModule('RESOURCE_TYPE_OBJECTS', objectOperations, async (app, { objects }: ObjectRouteOptions) => {
  const view = (req: FastifyRequest, o: StoredObject) => toView(o, o.accountId === req.principal.accountId ? objects.uploadUrl(o, requestBase(req)) : null);

  // A retried x-request-id answers the same object: the answer's upload_url is a credential (an
  // unauthenticated PUT), so the replay table keeps it sealed under the server key, never in clear.
  app.post('/v1/objects', { schema: { body: CreateObjectBody, response: replies(ObjectViewSchema) }, config: { idempotent: 'sealed' } }, async (req) => {
    const b = req.body;
    return view(req, await objects.create(req.principal.accountId, { name: b.name, contentType: b.content_type, metadata: b.metadata, ttlMs: b.ttl_ms }));
  });

  app.get('/v1/objects', { schema: { querystring: ObjectListQuery, response: replies(ObjectListView) } }, async (req) => {
    const page = await objects.list(req.principal.accountId, filterOf(req.query), toPageQuery(req.query));
    return pageEnvelope('objects', { ...page, items: page.items.map((o) => toView(o)) });
  });

  app.get('/v1/objects/list_public', { schema: { querystring: ObjectListQuery, response: replies(ObjectListView) } }, async (req) => {
    const page = await objects.listPublic(filterOf(req.query), toPageQuery(req.query));
    return pageEnvelope('objects', { ...page, items: page.items.map((o) => toView(o)) });
  });

  app.get('/v1/objects/:id', { schema: { params: IdParams, response: replies(ObjectViewSchema) } }, async (req) =>
    view(req, await objects.get(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/objects/:id/complete', { schema: { params: IdParams, response: replies(ObjectViewSchema) } }, async (req) =>
    toView(await objects.complete(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/objects/:id/delete', { schema: { params: IdParams, response: replies(ObjectViewSchema) } }, async (req) =>
    toView(await objects.delete(req.principal.accountId, req.params.id)),
  );

  app.get('/v1/objects/:id/download', { schema: { params: IdParams, querystring: DownloadQuery, response: replies(DownloadUrlView) } }, async (req) => ({
    download_url: await objects.downloadUrl(req.principal.accountId, req.params.id, req.query.duration_seconds ?? DOWNLOAD_URL_SECONDS, requestBase(req)),
  }));

  await app.register(presignedRoutes, { objects });
});
