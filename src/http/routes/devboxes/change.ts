import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { DevboxService } from '../../../domain/devboxes/devbox-service.js';
import { Body, LIMITS, Metadata, Opt } from '../../schemas/common.js';
import { DevboxIdParams, toView } from './schemas.js';

/** Omitted or null leaves a field as it is (the SDK sends null so); "" clears the name, {} the metadata. */
const UpdateBody = Body({
  name: Opt(Type.String({ maxLength: LIMITS.name })),
  metadata: Opt(Metadata),
});
const ShutdownQuery = Type.Object({ force: Type.Optional(Type.Boolean()) });

export function changeRoutes(app: FastifyInstance, devboxes: DevboxService): void {
  app.post('/v1/devboxes/:id', { schema: { params: DevboxIdParams, body: UpdateBody } }, async (req) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    return toView(await devboxes.update(req.principal.accountId, id, req.body as Static<typeof UpdateBody>));
  });

  app.post('/v1/devboxes/:id/shutdown', { schema: { params: DevboxIdParams, querystring: ShutdownQuery } }, async (req) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    const { force } = req.query as Static<typeof ShutdownQuery>;
    return toView(await devboxes.shutdown(req.principal.accountId, id, force ?? false));
  });

  app.post('/v1/devboxes/:id/keep_alive', { schema: { params: DevboxIdParams }, config: { idempotent: false } }, async (req) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    await devboxes.keepAlive(req.principal.accountId, id);
    return {};
  });
}
