import { Type } from 'typebox';
import { allows, type Principal } from '../../../platform/auth/principal.js';
import type { DevboxService } from '../devbox-service.js';
import type { Devbox } from '../types.js';
import { ERRORS } from '../../../platform/errors.js';
import { ElsewhereError, fromPeer } from '../../../platform/http/peers.js';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, Opt, pageEnvelope, PageQuerySchema, pageSchema, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams, DevboxViewSchema, StatusSchema, UsageViewSchema, view } from './schemas.js';

// `search` is devboxd's (the SDK does not send it; the console does): the box with that id, or whose name
// contains it. No NUL: PostgreSQL text cannot hold one.
const SearchSchema = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' });
const ListQuery = Type.Intersect([PageQuerySchema, Type.Object({ status: Type.Optional(StatusSchema), search: Type.Optional(SearchSchema) })]);
const WaitBody = Body({
  statuses: Type.Array(StatusSchema, { minItems: 1, maxItems: 20 }),
  timeout_seconds: Opt(Type.Number({ minimum: 0, maximum: 3600 })),
});

const DEFAULT_WAIT_S = 10;
const MAX_WAIT_S = 30;

const ListView = pageSchema('devboxes', DevboxViewSchema);

/**
 * The view as this key may see it: an authenticated tunnel's `auth_token` opens the box's ports, and what
 * listens there serves the box's contents, which need devbox write; a read key sees the tunnel without it.
 */
function forKey<V extends object>(p: Principal, v: V): V {
  const tunnel = (v as { tunnel?: { auth_token?: unknown } | null }).tunnel;
  if (!tunnel?.auth_token || allows(p, 'RESOURCE_TYPE_DEVBOXES', 'write')) return v;
  return { ...v, tunnel: { ...tunnel, auth_token: undefined } };
}

export function readRoutes(app: Api, devboxes: DevboxService): void {
  app.get('/v1/devboxes/:id', { config: { overlapAuth: 'folded' }, schema: { params: DevboxIdParams, response: replies(DevboxViewSchema) } }, async (req) => {
    const { id } = req.params;
    // A hinted key (PostgreSQL) is read in the box's statement: the whole GET is one statement.
    const keyHash = req.keyCheck?.fold();
    let devbox: Devbox | undefined;
    if (keyHash === undefined) devbox = await devboxes.get(req.principal.accountId, id);
    else {
      const read = await devboxes.getWithKey(keyHash, id);
      req.keyCheck!.settle(read.key);
      devbox = read.devbox;
    }
    if (!devbox) throw ERRORS.notFound('devbox', id);
    const answer = async () => forKey(req.principal, await view(devboxes, devbox));
    // The record says where the box runs: that node's API server answers, as for every request naming a box
    // (the routing front leaves this one to this handler, so it costs no read of its own); when that node
    // cannot be reached, this server answers from the record, which is all a view is.
    const node = fromPeer(req.raw) ? undefined : devboxes.elsewhere(devbox);
    if (node) throw new ElsewhereError(node, answer);
    return answer();
  });

  app.get('/v1/devboxes', { config: { overlapAuth: true }, schema: { querystring: ListQuery, response: replies(ListView) } }, async (req) => {
    const q = req.query;
    const page = await devboxes.list(req.principal.accountId, toPageQuery(q), { status: q.status, search: q.search });
    return pageEnvelope('devboxes', { ...page, items: await Promise.all(page.items.map(async (d) => forKey(req.principal, await view(devboxes, d)))) });
  });

  // Long-poll: 200 once a requested status is reached, 408 when the hold ends (the SDK re-sends at once).
  app.post(
    '/v1/devboxes/:id/wait_for_status',
    { schema: { params: DevboxIdParams, body: WaitBody, response: replies(DevboxViewSchema) }, config: { idempotent: false, access: 'read' } },
    async (req, reply) => {
      const { id } = req.params;
      const body = req.body;
      const seconds = Math.min(body.timeout_seconds ?? DEFAULT_WAIT_S, MAX_WAIT_S);
      const d = await devboxes.waitForStatus(req.principal.accountId, id, body.statuses, seconds * 1000, clientGone(reply));
      if (!d) throw ERRORS.waitTimeout(`devbox ${id} did not reach ${body.statuses.join(' or ')} within ${seconds}s`);
      return forKey(req.principal, await view(devboxes, d));
    },
  );

  app.get('/v1/devboxes/:id/usage', { schema: { params: DevboxIdParams, response: replies(UsageViewSchema) } }, async (req) => {
    const { id } = req.params;
    const { devbox: d, stats } = await devboxes.usage(req.principal.accountId, id);
    const end = d.endTimeMs ?? Date.now();
    let active = 0;
    d.stateTransitions.forEach((t, i) => {
      if (t.status !== 'running') return;
      active += (d.stateTransitions[i + 1]?.transitionTimeMs ?? end) - t.transitionTimeMs;
    });
    const activeS = active / 1000;
    const GiB = 1024 ** 3;
    return {
      id: d.id,
      status: d.status,
      start_time_ms: d.createTimeMs,
      end_time_ms: d.endTimeMs,
      total_elapsed_seconds: (end - d.createTimeMs) / 1000,
      total_active_seconds: activeS,
      vcpu_seconds: activeS * d.sandbox.limits.cpuCores,
      memory_gb_seconds: (activeS * d.sandbox.limits.memoryBytes) / GiB,
      disk_gb_seconds: ((end - d.createTimeMs) / 1000) * ((stats?.diskBytes ?? 0) / GiB),
      memory_bytes: stats?.memoryBytes ?? null,
      cpu_micros: stats?.cpuMicros ?? null,
    };
  });
}
