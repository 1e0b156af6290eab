import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import type { DevboxService } from '../../../domain/devboxes/devbox-service.js';
import type { FileService } from '../../../domain/files/file-service.js';
import { contentRoutes } from './contents.js';
import { downloadRoutes } from './download.js';
import { uploadRoutes } from './upload.js';

export interface FileRouteOptions {
  files: FileService;
  devboxes: DevboxService;
}

/** File transfer into and out of devboxes; multipart is parsed in this scope only. */
export async function fileRoutes(scope: FastifyInstance, opts: FileRouteOptions): Promise<void> {
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), resource: 'RESOURCE_TYPE_DEVBOXES' } as typeof route.config;
  });
  // Uploads stream straight into the box, so no size cap beyond the box's disk; the JSON body limit is separate.
  await scope.register(multipart, {
    limits: { fileSize: Number.MAX_SAFE_INTEGER, files: 1, fields: 8, fieldSize: 64 * 1024, parts: 16 },
  });
  uploadRoutes(scope, opts);
  downloadRoutes(scope, opts);
  contentRoutes(scope, opts);
}
