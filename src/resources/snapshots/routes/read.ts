import { Type } from 'typebox';
import type { SnapshotService } from '../snapshot-service.js';
import type { SnapshotFilters } from '../types.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { pageEnvelope, PageQuerySchema, pageSchema, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import { SnapshotIdParams, SnapshotViewSchema, StatusViewSchema, toStatusView, toView } from './schemas.js';

/** `metadata[k]` and `metadata[k][in]` keys are open-ended, so the query allows extra properties. */
const ListQuery = Type.Intersect([
  PageQuerySchema,
  Type.Object({ devbox_id: Type.Optional(Type.String({ maxLength: 200 })), source_blueprint_id: Type.Optional(Type.String({ maxLength: 200 })) }),
]);

/** Reads `metadata[k]=v` (equals) and `metadata[k][in]=v1,v2` (any of) from the raw query keys. */
export function metadataFilters(query: Record<string, unknown>): Pick<SnapshotFilters, 'metadataEquals' | 'metadataIn'> {
  const metadataEquals: Record<string, string> = {};
  const metadataIn: Record<string, string[]> = {};
  for (const [key, raw] of Object.entries(query)) {
    const value = Array.isArray(raw) ? String(raw.at(-1)) : String(raw);
    const inMatch = /^metadata\[(.+)\]\[in\]$/.exec(key);
    if (inMatch) {
      metadataIn[inMatch[1]!] = value.split(',').filter((v) => v !== '');
      continue;
    }
    const eq = /^metadata\[(.+)\]$/.exec(key);
    if (eq) metadataEquals[eq[1]!] = value;
  }
  return { metadataEquals, metadataIn };
}

const ListView = pageSchema('snapshots', SnapshotViewSchema);

export function readRoutes(app: Api, snapshots: SnapshotService): void {
  app.get('/v1/devboxes/disk_snapshots', { schema: { querystring: ListQuery, response: replies(ListView) } }, async (req) => {
    const q = req.query;
    const page = await snapshots.list(req.principal.accountId, toPageQuery(q), {
      devboxId: q.devbox_id || undefined,
      sourceBlueprintId: q.source_blueprint_id || undefined,
      ...metadataFilters(q as Record<string, unknown>),
    });
    return pageEnvelope('snapshots', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/devboxes/disk_snapshots/:id', { schema: { params: SnapshotIdParams, response: replies(SnapshotViewSchema) } }, async (req) => {
    const { id } = req.params;
    return toView(await snapshots.get(req.principal.accountId, id));
  });

  app.get('/v1/devboxes/disk_snapshots/:id/status', { schema: { params: SnapshotIdParams, response: replies(StatusViewSchema) } }, async (req) => {
    const { id } = req.params;
    return toStatusView(await snapshots.status(req.principal.accountId, id));
  });
}
