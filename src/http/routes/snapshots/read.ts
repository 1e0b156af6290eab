import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { SnapshotService } from '../../../domain/snapshots/snapshot-service.js';
import type { SnapshotFilters } from '../../../domain/snapshots/types.js';
import { pageEnvelope, PageQuerySchema, toPageQuery } from '../../schemas/common.js';
import { SnapshotIdParams, toStatusView, toView } from './schemas.js';

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

export function readRoutes(app: FastifyInstance, snapshots: SnapshotService): void {
  app.get('/v1/devboxes/disk_snapshots', { schema: { querystring: ListQuery } }, async (req) => {
    const q = req.query as Static<typeof ListQuery> & Record<string, unknown>;
    const page = await snapshots.list(req.principal.accountId, toPageQuery(q), {
      devboxId: q.devbox_id || undefined,
      sourceBlueprintId: q.source_blueprint_id || undefined,
      ...metadataFilters(q),
    });
    return pageEnvelope('snapshots', { ...page, items: page.items.map(toView) });
  });

  app.get('/v1/devboxes/disk_snapshots/:id', { schema: { params: SnapshotIdParams } }, async (req) => {
    const { id } = req.params as Static<typeof SnapshotIdParams>;
    return toView(await snapshots.get(req.principal.accountId, id));
  });

  app.get('/v1/devboxes/disk_snapshots/:id/status', { schema: { params: SnapshotIdParams } }, async (req) => {
    const { id } = req.params as Static<typeof SnapshotIdParams>;
    return toStatusView(await snapshots.status(req.principal.accountId, id));
  });
}
