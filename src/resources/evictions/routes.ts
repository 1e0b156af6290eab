import { Type } from 'typebox';
import { resourceModule } from '../../platform/http/resource-module.js';
import { startSse } from '../../platform/http/sse.js';
import { ERROR_RESPONSES } from '../../platform/http/schemas/common.js';

/**
 * `GET /v1/devboxes/evictions/watch`: the account's pending evictions, then each new one, as server-sent
 * events `{devbox_id, eviction_deadline_ms}`. devboxd never evicts a box (no resource-pressure eviction; a
 * server that stops leaves its boxes running, adopted at the next start), so the stream stays open with
 * keep-alive comments and sends no event. Like the API, only `Accept: text/event-stream` streams; any other
 * Accept (the generated client's `application/json`) gets an empty text/plain answer at once.
 */
export const evictionRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', (app) => {
  app.get(
    '/v1/devboxes/evictions/watch',
    {
      schema: {
        response: {
          200: { description: 'DevboxEvictionEventView events', content: { 'text/event-stream': { schema: Type.String() }, 'text/plain': { schema: Type.String() } } },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
        return reply.type('text/plain').send('');
      }
      const sse = startSse(reply);
      await new Promise<void>((resolve) => sse.signal.addEventListener('abort', () => resolve(), { once: true }));
      sse.end();
    },
  );
});
