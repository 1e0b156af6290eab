import type { ServerResponse } from 'node:http';
import { Type } from 'typebox';
import { ERRORS } from '../../../platform/errors.js';
import type { Api } from '../../../platform/http/resource-module.js';
import type { ERROR_RESPONSES } from '../../../platform/http/schemas/common.js';
import { startSse } from '../../../platform/http/sse.js';
import type { AxonService } from '../axon-service.js';
import { AxonIdParams, SubscribeQuery, toEventView } from './schemas.js';

/** Where a stream starts: `after_sequence` (what the SDK sends), else Last-Event-ID (an EventSource's resume). */
function startAfter(query: number | undefined, lastEventId: string | string[] | undefined): number {
  if (query !== undefined) return query;
  if (lastEventId === undefined) return 0;
  const n = Number(Array.isArray(lastEventId) ? lastEventId[0] : lastEventId);
  if (!Number.isSafeInteger(n) || n < 0) throw ERRORS.invalid('Last-Event-ID must be the sequence number of an event');
  return n;
}

/** Destroys the response unless it finishes (its buffered bytes reach the client) within `ms`. */
function finishWithin(res: ServerResponse, ms: number): void {
  if (res.writableFinished || res.destroyed) return;
  const t = setTimeout(() => res.destroy(), ms);
  t.unref();
  const clear = () => clearTimeout(t);
  res.once('finish', clear);
  res.once('close', clear);
}

/**
 * `subscribe/sse`: the kept events after the start, then live ones, each with `id: <sequence>`. A subscriber
 * that falls behind is ended with an `event: error` of code 408 naming the sequence to resume after, which the
 * SDK does by itself (it reconnects on 408 with after_sequence); a deleted axon ends its streams with a 404.
 *
 * What a stream holds is bounded: a store page (about 1 MiB) or its live queue, written one event at a time
 * with back-pressure, so the socket buffers at most one event past its high-water mark. A client that stops
 * reading holds its slot no longer than the stall time: a write that does not drain by then cuts the
 * connection. An ended stream gives its slot back at once; its last bytes get the stall time to leave.
 */
export function sseRoute(app: Api, axons: AxonService, errors: typeof ERROR_RESPONSES): void {
  app.get(
    '/v1/axons/:id/subscribe/sse',
    {
      schema: {
        params: AxonIdParams,
        querystring: SubscribeQuery,
        response: { 200: { description: 'AxonEventView events', content: { 'text/event-stream': { schema: Type.String() } } }, ...errors },
      },
    },
    async (req, reply) => {
      const after = startAfter(req.query.after_sequence, req.headers['last-event-id']);
      const sub = await axons.subscribe(req.principal.accountId, req.params.id, after);
      const sse = startSse(reply);
      const res = reply.raw;
      const stallMs = axons.streamStallMs;
      sub.onEnd = (reason) => {
        if (reason.kind === 'overflow') sse.error(408, reason.message);
        if (reason.kind === 'deleted') sse.error(404, reason.message);
        // Its slot goes back now, not once a writer blocked on a client that does not read gets a drain.
        axons.unsubscribe(sub);
        sse.end();
        finishWithin(res, stallMs);
      };
      // A client already gone fires no further abort: it is unsubscribed at once.
      if (sse.signal.aborted) axons.unsubscribe(sub);
      else sse.signal.addEventListener('abort', () => axons.unsubscribe(sub), { once: true });
      try {
        for await (const batch of sub.batches()) {
          // Corked: a batch's events leave in one write while they fit under the high-water mark.
          res.cork();
          for (const e of batch) {
            const written = sse.dataAll([toEventView(e)], [String(e.sequence)]);
            if (res.writableNeedDrain) {
              res.uncork();
              // Destroying the response aborts the signal, which ends the wait for a drain.
              const stalled = setTimeout(() => res.destroy(), stallMs);
              await written;
              clearTimeout(stalled);
              res.cork();
            }
            if (sub.endReason || res.destroyed) break;
          }
          res.uncork();
        }
      } catch (err) {
        req.log.error({ err }, 'axon stream failed');
        sse.error(500, 'the event stream failed; resume with after_sequence');
      } finally {
        axons.unsubscribe(sub);
        sse.end();
        finishWithin(res, stallMs);
      }
    },
  );
}
