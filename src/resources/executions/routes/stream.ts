import { Type } from 'typebox';
import type { ExecutionService } from '../execution-service.js';
import type { OutputChunk } from '../box-jobs.js';
import type { OutputStream } from '../types.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { startSse } from '../../../platform/http/sse.js';
import { ExecutionParams, sseReplies } from './schemas.js';

/** `offset` is a string on the wire; missing or empty means 0. */
const OffsetQuery = Type.Object({ offset: Type.Optional(Type.String({ pattern: '^[0-9]{0,15}$' })) });

/**
 * One event per line of a chunk (a last piece without its newline is an event of its own), each with the
 * offset after it: the SDK hands every event to the `stdout`/`stderr`/`output` callbacks of `exec`, which it
 * names and documents as lines, and Runloop's smoke tests count one call per line.
 */
export function byLine(chunk: OutputChunk): OutputChunk[] {
  const text = chunk.output;
  if (text.indexOf('\n') === -1 || text.indexOf('\n') === text.length - 1) return [chunk];
  const pieces = text.match(/[^\n]*\n|[^\n]+$/g) ?? [text];
  let end = chunk.offset - Buffer.byteLength(text);
  return pieces.map((output) => ({ output, offset: (end += Buffer.byteLength(output)) }));
}

/**
 * SSE of one output stream: `{"output", "offset"}` events, one per line (`byLine`), where offset is the byte
 * position after the line, from `?offset=` on; replay then live; the response ends once the execution
 * completed and every byte went out.
 */
export function streamRoutes(app: Api, executions: ExecutionService): void {
  for (const stream of ['stdout', 'stderr'] as OutputStream[]) {
    app.get(
      `/v1/devboxes/:id/executions/:execution_id/stream_${stream}_updates`,
      { schema: { params: ExecutionParams, querystring: OffsetQuery, response: sseReplies(`{"output", "offset"} events of ${stream}`) } },
      async (req, reply) => {
        const { id, execution_id } = req.params;
        const offset = Number(req.query.offset || 0);
        await executions.get(req.principal.accountId, id, execution_id); // 404s as JSON, before streaming
        const sse = startSse(reply);
        try {
          for await (const chunk of executions.follow(id, execution_id, stream, offset, sse.signal)) await sse.dataAll(byLine(chunk));
        } catch (err) {
          req.log.error({ err, execution: execution_id }, 'output stream failed');
          sse.error(500, 'output stream failed');
        } finally {
          sse.end();
        }
      },
    );
  }
}
