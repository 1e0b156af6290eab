import { Type } from 'typebox';
import type { ExecutionService } from '../execution-service.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, Opt, replies, StringEnum } from '../../../platform/http/schemas/common.js';
import { AsyncViewSchema, DEFAULT_LAST_N, ExecutionParams, toAsyncView } from './schemas.js';

const KillBody = Body({ kill_process_group: Opt(Type.Boolean()) });
const StdinBody = Body({
  text: Opt(Type.String({ maxLength: 1_000_000 })),
  signal: Opt(StringEnum(['EOF', 'INTERRUPT'])),
});
const StdinResult = Type.Object({ devbox_id: Type.String(), execution_id: Type.String(), success: Type.Boolean() });

export function controlRoutes(app: Api, executions: ExecutionService): void {
  // Answers once the command is gone, with its final view (killing twice is harmless: no replay cache).
  app.post(
    '/v1/devboxes/:id/executions/:execution_id/kill',
    { schema: { params: ExecutionParams, body: KillBody, response: replies(AsyncViewSchema) }, config: { idempotent: false } },
    async (req) => {
      const { id, execution_id } = req.params;
      const body = req.body ?? {};
      const e = await executions.kill(req.principal.accountId, id, execution_id, body.kill_process_group ?? false);
      return toAsyncView(e, e.status === 'completed' ? await executions.output(e, DEFAULT_LAST_N) : null);
    },
  );

  app.post(
    '/v1/devboxes/:id/executions/:execution_id/send_std_in',
    { schema: { params: ExecutionParams, body: StdinBody, response: replies(StdinResult) } },
    async (req) => {
      const { id, execution_id } = req.params;
      await executions.sendStdin(req.principal.accountId, id, execution_id, req.body ?? {});
      return { devbox_id: id, execution_id, success: true };
    },
  );
}
