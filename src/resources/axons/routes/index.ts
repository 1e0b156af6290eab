import { ERRORS } from '../../../platform/errors.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { ERROR_RESPONSES, pageEnvelope, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import { metadataFilters } from '../../snapshots/index.js';
import type { AxonService } from '../axon-service.js';
import { axonOperations } from './operations.js';
import { sseRoute } from './sse.js';
import {
  AxonIdParams,
  AxonListQuery,
  AxonListView,
  AxonViewSchema,
  CreateAxonBody,
  EventListView,
  EventsQuery,
  PublishBody,
  PublishResultSchema,
  SqlBatchBody,
  SqlBatchResultSchema,
  SqlQueryBody,
  SqlQueryResultSchema,
  toEventView,
  toStep,
  toView,
  UpdateAxonBody,
} from './schemas.js';

/** A bound parameter: what SQLite can take from JSON (booleans as 1/0); anything else is a 400 naming it. */
function params(list: unknown[] | null | undefined, where: string): unknown[] {
  const out = list ?? [];
  for (const [i, v] of out.entries()) {
    if (v !== null && !['string', 'number', 'boolean'].includes(typeof v))
      throw ERRORS.invalid(`${where}.params[${i}] must be null, a number, a string or a boolean`);
  }
  return out;
}

/**
 * Axons (Beta): event streams with metadata, soft-deleted. Runloop's restricted-key scopes have no axon
 * type; axons feed agents, so RESOURCE_TYPE_AGENTS governs them.
 */
export const axonRoutes = resourceModule('RESOURCE_TYPE_AGENTS', axonOperations, (app, opts: { axons: AxonService }) => {
  const { axons } = opts;

  app.post('/v1/axons', { schema: { body: CreateAxonBody, response: replies(AxonViewSchema) } }, async (req) =>
    toView(await axons.create(req.principal.accountId, { name: req.body.name, metadata: req.body.metadata })),
  );

  app.get('/v1/axons', { schema: { querystring: AxonListQuery, response: replies(AxonListView) } }, async (req) => {
    const q = req.query;
    const page = await axons.list(req.principal.accountId, toPageQuery(q), {
      id: q.id || undefined,
      name: q.name || undefined,
      search: q.search || undefined,
      ...metadataFilters(q as Record<string, unknown>),
    });
    return pageEnvelope('axons', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/axons/:id', { schema: { params: AxonIdParams, response: replies(AxonViewSchema) } }, async (req) =>
    toView(await axons.get(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/axons/:id', { schema: { params: AxonIdParams, body: UpdateAxonBody, response: replies(AxonViewSchema) } }, async (req) =>
    toView(await axons.update(req.principal.accountId, req.params.id, req.body.metadata)),
  );

  app.delete('/v1/axons/:id', { schema: { params: AxonIdParams, response: replies(AxonViewSchema) } }, async (req) =>
    toView(await axons.delete(req.principal.accountId, req.params.id)),
  );

  app.post('/v1/axons/:id/publish', { schema: { params: AxonIdParams, body: PublishBody, response: replies(PublishResultSchema) } }, async (req) => {
    const b = req.body;
    const e = await axons.publish(req.principal.accountId, req.params.id, {
      eventType: b.event_type,
      origin: b.origin,
      payload: b.payload,
      source: b.source,
    });
    return { sequence: e.sequence, timestamp_ms: e.timestampMs };
  });

  app.get('/v1/axons/:id/events', { schema: { params: AxonIdParams, querystring: EventsQuery, response: replies(EventListView) } }, async (req) => {
    const q = toPageQuery(req.query);
    const page = await axons.events(req.principal.accountId, req.params.id, q.limit, q.startingAfter, q.includeTotalCount);
    return { events: page.events.map(toEventView), has_more: page.hasMore, total_count: page.total };
  });

  app.post('/v1/axons/:id/sql/query', { schema: { params: AxonIdParams, body: SqlQueryBody, response: replies(SqlQueryResultSchema) } }, async (req) => {
    const [outcome] = await axons.query(req.principal.accountId, req.params.id, [{ sql: req.body.sql, params: params(req.body.params, 'body') }], false);
    if (!outcome || 'error' in outcome) {
      const message = outcome?.error ?? 'the statement gave no result';
      throw outcome && 'tooLarge' in outcome ? ERRORS.tooLarge(message) : ERRORS.invalid(message);
    }
    return outcome.success;
  });

  app.post('/v1/axons/:id/sql/batch', { schema: { params: AxonIdParams, body: SqlBatchBody, response: replies(SqlBatchResultSchema) } }, async (req) => {
    const statements = req.body.statements.map((s, i) => ({ sql: s.sql, params: params(s.params, `body.statements[${i}]`) }));
    return { results: (await axons.query(req.principal.accountId, req.params.id, statements, true)).map(toStep) };
  });

  sseRoute(app, axons, ERROR_RESPONSES);
});
