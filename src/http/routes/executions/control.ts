import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { ExecutionService } from '../../../domain/executions/execution-service.js';
import { Body, Opt, StringEnum } from '../../schemas/common.js';
import { DEFAULT_LAST_N, ExecutionParams, toAsyncView } from './schemas.js';

const KillBody = Body({ kill_process_group: Opt(Type.Boolean()) });
const StdinBody = Body({
  text: Opt(Type.String({ maxLength: 1_000_000 })),
  signal: Opt(StringEnum(['EOF', 'INTERRUPT'])),
});

export function controlRoutes(app: FastifyInstance, executions: ExecutionService): void {
  // Answers once the command is gone, with its final view (killing twice is harmless: no replay cache).
  app.post(
    '/v1/devboxes/:id/executions/:execution_id/kill',
    { schema: { params: ExecutionParams, body: KillBody }, config: { idempotent: false } },
    async (req) => {
      const { id, execution_id } = req.params as Static<typeof ExecutionParams>;
      const body = (req.body ?? {}) as Static<typeof KillBody>;
      const e = await executions.kill(req.principal.accountId, id, execution_id, body.kill_process_group ?? false);
      return toAsyncView(e, e.status === 'completed' ? await executions.output(e, DEFAULT_LAST_N) : null);
    },
  );

  app.post('/v1/devboxes/:id/executions/:execution_id/send_std_in', { schema: { params: ExecutionParams, body: StdinBody } }, async (req) => {
    const { id, execution_id } = req.params as Static<typeof ExecutionParams>;
    const body = (req.body ?? {}) as Static<typeof StdinBody>;
    await executions.sendStdin(req.principal.accountId, id, execution_id, body);
    return { devbox_id: id, execution_id, success: true };
  });
}
