import { Type } from 'typebox';
import { clientGone } from '../../request-signal.js';
import type { Api } from '../../resource-module.js';
import { Body, ERROR_RESPONSES, replies } from '../../schemas/common.js';
import { DevboxIdParams } from '../devboxes/schemas.js';
import { SyncViewSchema } from '../executions/schemas.js';
import type { FileRouteOptions } from './index.js';

/** read_file_contents answers in one body; bigger files belong to download_file. */
const MAX_TEXT_BYTES = 64 * 1024 * 1024;

const ReadBody = Body({ file_path: Type.String({ maxLength: 4096 }) });
const WriteBody = Body({ file_path: Type.String({ maxLength: 4096 }), contents: Type.String() });

const TextReplies = { 200: { description: 'the file as UTF-8 text', content: { 'text/plain': { schema: Type.String() } } }, ...ERROR_RESPONSES };

export function contentRoutes(app: Api, { files, devboxes }: FileRouteOptions): void {
  app.post(
    '/v1/devboxes/:id/read_file_contents',
    { schema: { params: DevboxIdParams, body: ReadBody, response: TextReplies }, config: { idempotent: false, access: 'read' } },
    async (req, reply) => {
      const { id } = req.params;
      const { file_path } = req.body;
      const text = await files.readText(req.principal.accountId, id, file_path, MAX_TEXT_BYTES, clientGone(reply));
      devboxes.touch(id);
      return reply.type('text/plain; charset=utf-8').send(text);
    },
  );

  // Answers like execute_sync did for the same job (DevboxExecutionDetailView).
  app.post(
    '/v1/devboxes/:id/write_file_contents',
    { schema: { params: DevboxIdParams, body: WriteBody, response: replies(SyncViewSchema) } },
    async (req, reply) => {
    const { id } = req.params;
    const { file_path, contents } = req.body;
    await files.write(req.principal.accountId, id, file_path, contents, clientGone(reply));
    devboxes.touch(id);
    return { devbox_id: id, exit_status: 0, stdout: '', stderr: '' };
    },
  );
}
