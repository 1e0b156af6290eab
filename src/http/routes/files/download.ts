import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { clientGone } from '../../request-signal.js';
import { DevboxIdParams } from '../devboxes/schemas.js';
import type { FileRouteOptions } from './index.js';
import { holdSlot } from './slots.js';

const DownloadBody = Type.Object({ path: Type.String({ maxLength: 4096 }) });

export function downloadRoutes(app: FastifyInstance, { files, devboxes, transferGate }: FileRouteOptions): void {
  // Headers go out once the box found the file readable; the bytes then stream with back-pressure.
  app.post(
    '/v1/devboxes/:id/download_file',
    { schema: { params: DevboxIdParams, body: DownloadBody }, config: { idempotent: false, access: 'read' }, preParsing: holdSlot(transferGate, 'file transfers') },
    async (req, reply) => {
      const { id } = req.params as Static<typeof DevboxIdParams>;
      const { path } = req.body as Static<typeof DownloadBody>;
      const { stream, done } = await files.read(req.principal.accountId, id, path, clientGone(reply));
      done.then(
        () => devboxes.touch(id),
        (err: Error) => req.log.warn({ err, devbox: id, path }, 'download ended early'),
      );
      return reply.type('application/octet-stream').send(stream);
    },
  );
}
