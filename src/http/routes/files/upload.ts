import type { Readable } from 'node:stream';
import type { Multipart } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { DomainError, ERRORS } from '../../../domain/errors.js';
import { Upload } from '../../../domain/files/upload.js';
import { clientGone } from '../../request-signal.js';
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

/**
 * The request's parts, with every parser failure (no or wrong boundary, garbage, a body that ends before
 * its closing boundary, too many parts) turned into a 400 that says so: none of them is the server's fault.
 */
async function* parts(req: FastifyRequest): AsyncGenerator<Multipart> {
  const it = req.parts()[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await it.next();
    } catch (err) {
      if (err instanceof DomainError) throw err;
      throw ERRORS.invalid(`malformed multipart body: ${(err as Error).message}`);
    }
    if (next.done) return;
    yield next.value;
  }
}

export function uploadRoutes(app: FastifyInstance, { files, devboxes }: FileRouteOptions): void {
  // multipart/form-data: `path` (relative to the home directory) and `file`. The SDK sends the path first,
  // so the bytes stream straight next to it; a file sent before its path is staged in the box and moved after.
  app.post('/v1/devboxes/:id/upload_file', { schema: { params: DevboxIdParams }, config: { idempotent: false } }, async (req, reply) => {
    const { id } = req.params as Static<typeof DevboxIdParams>;
    const accountId = req.principal.accountId;
    if (!req.isMultipart()) throw ERRORS.invalid('upload_file takes multipart/form-data with the fields path and file');
    devboxes.requireRunning(accountId, id);
    const upload = new Upload(files, accountId, id, clientGone(reply));
    try {
      for await (const part of parts(req)) {
        if (part.type === 'field') {
          if (part.fieldname !== 'path') throw ERRORS.invalid(`unknown multipart field ${part.fieldname}; upload_file takes path and file`);
          if (part.valueTruncated) throw ERRORS.invalid('the multipart field path is too long');
          upload.setPath(String(part.value));
          continue;
        }
        try {
          if (part.fieldname !== 'file') throw ERRORS.invalid(`unknown multipart file part ${part.fieldname}; upload_file takes path and file`);
          await upload.receive(part.file);
        } catch (err) {
          await drain(part.file);
          throw err;
        }
      }
      await upload.finish();
    } catch (err) {
      await upload.abort();
      throw err;
    }
    devboxes.touch(id);
    return {};
  });
}
