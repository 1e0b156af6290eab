import type { Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { DomainError, ERRORS } from '../../../platform/errors.js';
import { Upload } from '../upload.js';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { EmptyObject, replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import type { FileRouteOptions } from './options.js';
import { holdSlot } from './slots.js';
import { StallWatch } from './stall.js';

/**
 * Lets the rest of a refused request's body go by unread: the answer goes out at once (not after a large
 * file arrived for nothing) and an HTTP/1.1 connection stays usable for the next request.
 */
function discardBody(req: FastifyRequest): void {
  req.raw.unpipe();
  req.raw.resume();
}

/**
 * The request's parts, with every parser failure (no or wrong boundary, garbage, a body that ends before
 * its closing boundary, too many parts) turned into a 400 that says so: none of them is the server's fault.
 */
async function* parts(req: FastifyRequest, watch: StallWatch): AsyncGenerator<Multipart> {
  const it = req.parts()[Symbol.asyncIterator]();
  for (let first = true; ; first = false) {
    let next: IteratorResult<Multipart>;
    try {
      const pending = it.next();
      // The first call pipes the body into the parser; only then may the watch listen to it.
      if (first) watch.start();
      next = await Promise.race([pending, watch.stalled]);
    } catch (err) {
      if (err instanceof DomainError) throw err;
      throw ERRORS.invalid(`malformed multipart body: ${(err as Error).message}`);
    }
    if (next.done) return;
    yield next.value;
  }
}

export function uploadRoutes(app: Api, { files, devboxes, transferGate }: FileRouteOptions): void {
  // multipart/form-data: `path` (relative to the home directory) and `file`. The SDK sends the path first,
  // so the bytes stream straight next to it; a file sent before its path is staged in the box and moved after.
  app.post(
    '/v1/devboxes/:id/upload_file',
    {
      schema: { params: DevboxIdParams, consumes: ['multipart/form-data'], response: replies(EmptyObject) },
      config: { idempotent: false },
      preParsing: holdSlot(transferGate, 'file transfers'),
    },
    async (req, reply) => {
      const { id } = req.params;
      const accountId = req.principal.accountId;
      if (!req.isMultipart()) throw ERRORS.invalid('upload_file takes multipart/form-data with the fields path and file');
      await devboxes.requireRunning(accountId, id);
      const upload = new Upload(files, accountId, id, clientGone(reply));
      const watch = new StallWatch(req.raw, files.limits.stallMs);
      try {
        for await (const part of parts(req, watch)) {
          if (!part.fieldname) throw ERRORS.invalid('a multipart part has no name; upload_file takes the fields path and file');
          if (part.type === 'field') {
            if (part.fieldname !== 'path') throw ERRORS.invalid(`unknown multipart field ${part.fieldname}; upload_file takes path and file`);
            if (part.valueTruncated) throw ERRORS.invalid('the multipart field path is too long');
            upload.setPath(String(part.value));
            continue;
          }
          if (part.fieldname !== 'file') throw ERRORS.invalid(`unknown multipart file part ${part.fieldname}; upload_file takes path and file`);
          watch.follow(part.file);
          await upload.receive(part.file);
        }
        await upload.finish();
      } catch (err) {
        discardBody(req);
        await upload.abort();
        throw err;
      } finally {
        watch.stop();
      }
      devboxes.touch(id);
      return {};
    },
  );
}
