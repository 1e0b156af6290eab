import type { Module } from '../../host.js';
import { intsOf } from '../../platform/config-error.js';
import { visibilityCommands } from '../../platform/module/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { loadObjectConfig, type ObjectConfig } from './config.js';
import { objectMountExtensions } from './devbox-extensions.js';
import { EXPIRE_JOB, ObjectService } from './object-service.js';
import { Presigner } from './presign.js';
import { objectRoutes } from './routes/index.js';
import { OBJECTS_SCHEMA } from './schema.js';
import { SqlObjectStore } from './sql-object-store.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Storage objects: records, their blobs, presigned upload and download URLs, object mounts. */
    objects: ObjectService;
    objectConfig: ObjectConfig;
  }
}

/** Storage objects (blobs in the blob store), presigned URLs, expiry jobs and object mounts in boxes. */
export const objectsModule: Module<ObjectConfig> = {
  name: 'objects',
  needs: [devboxesModule],
  config: (env) => loadObjectConfig(env, intsOf(env)),
  schema: OBJECTS_SCHEMA,
  build({ host, config, use }) {
    // Presigned URLs are signed under a key derived from the master key this server held first (see presign.ts).
    const objects = new ObjectService(
      host.store,
      host.blobs,
      new Presigner(host.keys.first.key),
      () => host.jobs,
      config,
      host.logger.child({ component: 'objects' }),
    );
    // Expiry may wait for the server to serve (thousands may fall due while it was down), never gives up, and
    // runs on any node (the bytes are in the blob store): another takes over those of a lost node.
    host.jobs.register(EXPIRE_JOB, (job) => objects.expire(job.subjectId), { background: true, untilDone: true, anyNode: true });
    const mounts = objectMountExtensions(() => objects, config);
    use('devboxExtensions').resolver(mounts.resolver);
    use('devboxExtensions').bootStep(mounts.bootStep, 'mounts');
    return { objects, objectConfig: config };
  },
  routes: (app, s) => app.register(objectRoutes, { objects: s.objects }),
  start: { settle: (s) => s.objects.reconcile() },
  commands: visibilityCommands({
    plural: 'objects',
    one: 'object',
    article: 'an',
    means: 'listed by list_public, readable and mountable by every account (only its owner deletes it)',
    setPublic: (store, id, pub) => new SqlObjectStore(store.db).setPublic(id, pub),
  }),
};
