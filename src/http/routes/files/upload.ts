import type { Readable } from 'node:stream';
import { ERRORS } from '../../../domain/errors.js';
import { clientGone } from '../../request-signal.js';
import type { Api } from '../../resource-module.js';
import { EmptyObject, replies } from '../../schemas/common.js';
import { DevboxIdParams } from '../devboxes/schemas.js';
import type { FileRouteOptions } from './index.js';

/** Reads a stream to its end without keeping it, so the request can finish after an early error. */
function drain(stream: Readable): Promise<void> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
    stream.resume();
  });
}

export function uploadRoutes(app: Api, { files, devboxes }: FileRouteOptions): void {
  // multipart/form-data: `path` (relative to the home directory) and `file`. The SDK sends the path first,
  // so the bytes stream straight to it; a file sent before its path is staged in the box and moved after.
  const schema = { params: DevboxIdParams, consumes: ['multipart/form-data'], response: replies(EmptyObject) };
  app.post('/v1/devboxes/:id/upload_file', { schema, config: { idempotent: false } }, async (req, reply) => {
    const { id } = req.params;
    const accountId = req.principal.accountId;
    if (!req.isMultipart()) throw ERRORS.invalid('upload_file takes multipart/form-data with the fields path and file');
    devboxes.requireRunning(accountId, id);
    const signal = clientGone(reply);
    let path: string | undefined;
    let staged: string | undefined;
    let received = false;
    for await (const part of req.parts()) {
      if (part.type === 'field') {
        if (part.fieldname === 'path') path = String(part.value);
        continue;
      }
      if (part.fieldname !== 'file' || received) {
        await drain(part.file);
        continue;
      }
      received = true;
      try {
        if (path !== undefined) await files.write(accountId, id, path, part.file, signal);
        else staged = await files.stage(accountId, id, part.file, signal);
      } catch (err) {
        await drain(part.file);
        throw err;
      }
    }
    if (staged !== undefined) {
      if (path === undefined) {
        await files.discard(accountId, id, staged);
        throw ERRORS.invalid('the multipart field path is missing');
      }
      await files.place(accountId, id, staged, path);
    }
    if (!received) throw ERRORS.invalid(path === undefined ? 'the multipart fields path and file are missing' : 'the multipart field file is missing');
    devboxes.touch(id);
    return {};
  });
}
