import type { Readable } from 'node:stream';
import { Type } from 'typebox';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, ERROR_RESPONSES } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import type { FileRouteOptions } from './options.js';
import { holdSlot } from './slots.js';
import { PathString } from '../paths.js';

const DownloadBody = Body({ path: PathString() });
const FileReplies = {
  200: { description: 'the file, streamed', content: { 'application/octet-stream': { schema: Type.Unsafe<Readable>({ type: 'string', format: 'binary' }) } } },
  ...ERROR_RESPONSES,
};

export function downloadRoutes(app: Api, { files, devboxes, transferGate }: FileRouteOptions): void {
  // Headers go out once the box found the file readable; the bytes then stream with back-pressure.
  app.post(
    '/v1/devboxes/:id/download_file',
    {
      schema: { params: DevboxIdParams, body: DownloadBody, response: FileReplies },
      // Write, like read_file_contents: the file's bytes are the box's contents, which a read-only key never gets.
      config: { idempotent: false, access: 'write' },
      preParsing: holdSlot(transferGate, 'file transfers'),
    },
    async (req, reply) => {
      const { id } = req.params;
      const { path } = req.body;
      const { stream, done } = await files.read(req.principal.accountId, id, path, clientGone(reply));
      done.then(
        () => devboxes.touch(id),
        (err: Error) => req.log.warn({ err, devbox: id, path }, 'download ended early'),
      );
      return reply.type('application/octet-stream').send(stream);
    },
  );
}
