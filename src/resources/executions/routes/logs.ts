import { Type, type Static } from 'typebox';
import type { ExecutionService } from '../execution-service.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { startSse } from '../../../platform/http/sse.js';
import { DevboxParams, LogViewSchema, sseReplies, toLogView } from './schemas.js';

const LogsQuery = Type.Object({
  execution_id: Type.Optional(Type.String({ maxLength: 200 })),
  shell_name: Type.Optional(Type.String({ maxLength: 100 })),
});

const filterOf = (q: Static<typeof LogsQuery>) => ({ executionId: q.execution_id || undefined, shellName: q.shell_name || undefined });

const LogsView = Type.Object({ logs: Type.Array(LogViewSchema) });

export function logRoutes(app: Api, executions: ExecutionService): void {
  app.get('/v1/devboxes/:id/logs', { schema: { params: DevboxParams, querystring: LogsQuery, response: replies(LogsView) } }, async (req) => {
    const { id } = req.params;
    const logs = await executions.logs(req.principal.accountId, id, filterOf(req.query));
    return { logs: logs.map(toLogView) };
  });

  // One unnamed event per log entry: the backlog, then live entries; ends once the devbox is terminal. The
  // filters hold for both; an unknown devbox or execution is a JSON 404 before the stream starts.
  const tailSchema = { params: DevboxParams, querystring: LogsQuery, response: sseReplies('one event per log entry (a devbox log entry as JSON)') };
  app.get('/v1/devboxes/:id/logs/tail', { schema: tailSchema }, async (req, reply) => {
    const { id } = req.params;
    const accountId = req.principal.accountId;
    const gone = new AbortController();
    const entries = await executions.tailLogs(accountId, id, filterOf(req.query), gone.signal);
    const sse = startSse(reply);
    // A client gone before the stream started (or a HEAD) fires no further abort.
    if (sse.signal.aborted) gone.abort();
    else sse.signal.addEventListener('abort', () => gone.abort());
    try {
      for await (const entry of entries) await sse.data(toLogView(entry));
    } catch (err) {
      req.log.error({ err, devbox: id }, 'log tail failed');
      sse.error(500, 'log tail failed');
    } finally {
      sse.end();
    }
  });
}
