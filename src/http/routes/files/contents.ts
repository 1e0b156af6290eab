import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { checkPath } from '../../../domain/files/paths.js';
import { clientGone } from '../../request-signal.js';
import { DevboxIdParams } from '../devboxes/schemas.js';
import type { FileRouteOptions } from './index.js';

/** read_file_contents answers in one body; bigger files belong to download_file. */
const MAX_TEXT_BYTES = 64 * 1024 * 1024;

const ReadBody = Type.Object({ file_path: Type.String({ maxLength: 4096 }) });
const WriteBody = Type.Object({ file_path: Type.String({ maxLength: 4096 }), contents: Type.String() });

export function contentRoutes(app: FastifyInstance, { files, devboxes }: FileRouteOptions): void {
  app.post(
    '/v1/devboxes/:id/read_file_contents',
    { schema: { params: DevboxIdParams, body: ReadBody }, config: { idempotent: false } },
    async (req, reply) => {
      const { id } = req.params as Static<typeof DevboxIdParams>;
      const { file_path } = req.body as Static<typeof ReadBody>;
      checkPath(file_path, 'file_path');
      const text = await files.readText(req.principal.accountId, id, file_path, MAX_TEXT_BYTES, clientGone(reply));
      devboxes.touch(id);
      return reply.type('text/plain; charset=utf-8').send(text);
    },
  );

  // Answers like execute_sync did for the same job (DevboxExecutionDetailView).
  app.post('/v1/devboxes/:id/write_file_contents', { schema: { params: DevboxIdParams, body: WriteBody } }, async (req, reply) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    const { file_path, contents } = req.body as Static<typeof WriteBody>;
    checkPath(file_path, 'file_path');
    await files.write(req.principal.accountId, id, file_path, contents, clientGone(reply));
    devboxes.touch(id);
    return { devbox_id: id, exit_status: 0, stdout: '', stderr: '' };
  });
}
