import type { ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import multipart from '@fastify/multipart';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { contentRoutes } from './contents.js';
import { downloadRoutes } from './download.js';
import { fileOperations } from './operations.js';
import type { FileRouteOptions } from './options.js';
import { uploadRoutes } from './upload.js';

/**
 * HTTP/2 flow-control windows for sessions that move files. Node's default (64 KiB per stream and
 * connection) caps an upload at a few dozen MiB/s on any link; these let a transfer fill the pipe while
 * bounding what the server buffers per session (it still reads only as fast as the box takes the bytes).
 */
const H2_STREAM_WINDOW = 4 * 1024 * 1024;
const H2_SESSION_WINDOW = 16 * 1024 * 1024;
const widened = new WeakSet<ServerHttp2Session>();

function widenWindows(session: ServerHttp2Session | undefined): void {
  if (!session || widened.has(session) || session.destroyed) return;
  widened.add(session);
  try {
    session.setLocalWindowSize(H2_SESSION_WINDOW);
    session.settings({ initialWindowSize: H2_STREAM_WINDOW });
  } catch {
    /* the session is closing */
  }
}

/** File transfer into and out of devboxes; multipart is parsed in this scope only. */
export const fileRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', fileOperations, async (scope, opts: FileRouteOptions) => {
  scope.addHook('onRequest', async (req) => {
    widenWindows((req.raw as { stream?: ServerHttp2Stream }).stream?.session as ServerHttp2Session | undefined);
  });
  // Uploads stream straight into the box, so no size cap beyond the box's disk; the JSON body limit is separate.
  // Two files pass the parser so the route itself can refuse the second with a 400 before anything is replaced.
  await scope.register(multipart, {
    limits: { fileSize: Number.MAX_SAFE_INTEGER, files: 2, fields: 8, fieldSize: 64 * 1024, parts: 16 },
  });
  uploadRoutes(scope, opts);
  downloadRoutes(scope, opts);
  contentRoutes(scope, opts);
});
