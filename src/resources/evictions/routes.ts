import { Type } from 'typebox';
import type { OperationDocs } from '../../platform/http/openapi/operations.js';
import { resourceModule } from '../../platform/http/resource-module.js';
import { startSse } from '../../platform/http/sse.js';
import { ERROR_RESPONSES } from '../../platform/http/schemas/common.js';
import type { EvictionService } from './eviction-service.js';
import type { Eviction } from './types.js';

/** Announcements a watcher may fall behind by; past it the stream ends and the SDK reconnects to the replay. */
const MAX_QUEUED = 1024;

export interface EvictionRouteOptions {
  evictions: EvictionService;
}

/** The SDK's DevboxEvictionEventView, with why the server evicts the box (an extra field clients may ignore). */
const view = (e: Eviction) => ({ devbox_id: e.devboxId, eviction_deadline_ms: e.deadlineMs, reason: e.reason });

/** The eviction stream in the API reference (/docs). */
const operations: OperationDocs = {
  tag: 'Evictions',
  operations: {
    'GET /v1/devboxes/evictions/watch': {
      sdk: ['devboxes.watchEvictions'],
      summary: 'Watch devbox evictions (SSE)',
      description:
        "Server-sent events `{devbox_id, eviction_deadline_ms, reason}` for the account's boxes: those with an eviction pending first, then " +
        'each new one. Only `Accept: text/event-stream` streams; any other Accept gets an empty `text/plain` answer at once.',
    },
  },
};

/**
 * `GET /v1/devboxes/evictions/watch`: the account's pending evictions, then each new one, as server-sent
 * events `{devbox_id, eviction_deadline_ms, reason}` (see README "Evictions" for when devboxd evicts). Like
 * the API, only `Accept: text/event-stream` streams; any other Accept (the generated client's
 * `application/json`) gets an empty text/plain answer at once.
 */
export const evictionRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', operations, (app, { evictions }: EvictionRouteOptions) => {
  app.get(
    '/v1/devboxes/evictions/watch',
    {
      schema: {
        response: {
          200: {
            description: 'DevboxEvictionEventView events',
            content: { 'text/event-stream': { schema: Type.String() }, 'text/plain': { schema: Type.String() } },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
        return reply.type('text/plain').send('');
      }
      const queue: Eviction[] = [];
      let wake: (() => void) | undefined;
      let overflow = false;
      // Subscribed before the replay is read: an eviction scheduled in between is queued, not lost.
      const unsubscribe = evictions.subscribe(req.principal.accountId, (e) => {
        if (queue.length >= MAX_QUEUED) overflow = true;
        else queue.push(e);
        wake?.();
      });
      let sse: ReturnType<typeof startSse> | undefined;
      try {
        const pending = await evictions.pending(req.principal.accountId);
        sse = startSse(reply);
        const sent = new Set<string>();
        queue.unshift(...pending);
        sse.signal.addEventListener('abort', () => wake?.(), { once: true });
        while (!sse.signal.aborted && !overflow) {
          const e = queue.shift();
          if (!e) {
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
            continue;
          }
          // The replay and a live announcement may carry the same eviction once each.
          const key = `${e.devboxId}:${e.deadlineMs}`;
          if (sent.has(key)) continue;
          sent.add(key);
          await sse.data(view(e));
        }
      } finally {
        unsubscribe();
        sse?.end();
      }
    },
  );
});
