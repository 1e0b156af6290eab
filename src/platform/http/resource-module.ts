import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ResourceType } from '../auth/principal.js';
import { describeOperation, type OperationDocs } from './openapi/operations.js';
import './plugins/context.js';

/** The instance route files register on: request types come from the TypeBox schemas, no casts. */
export type Api = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

type Plugin<O> = (scope: Api, opts: O) => void | Promise<void>;

/**
 * A resource module: a plugin whose routes all need one resource type on a restricted key, declared here
 * once. A route may still name its own (`config.resource`), e.g. a snapshot route under /v1/devboxes.
 * Routes outside any module must say `auth: false` or name a resource type, or the server refuses to start
 * (see `registerAuth`). `docs`, the module's table of operations, gives each route its operation id, summary
 * and section in the API reference (/docs).
 *
 * @example
 * export const devboxRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', devboxOperations, (scope, opts: DevboxRouteOptions) => { … });
 * await app.register(devboxRoutes, { devboxes });
 */
export function resourceModule<O>(resource: ResourceType, plugin: Plugin<O>): (scope: FastifyInstance, opts: O) => Promise<void>;
export function resourceModule<O>(resource: ResourceType, docs: OperationDocs, plugin: Plugin<O>): (scope: FastifyInstance, opts: O) => Promise<void>;
export function resourceModule<O>(resource: ResourceType, docsOrPlugin: OperationDocs | Plugin<O>, maybePlugin?: Plugin<O>) {
  const [docs, plugin] = typeof docsOrPlugin === 'function' ? [undefined, docsOrPlugin] : [docsOrPlugin, maybePlugin!];
  return async (scope: FastifyInstance, opts: O): Promise<void> => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, resource: route.config?.resource ?? resource } as typeof route.config;
      if (docs) describeOperation(route, docs);
    });
    await plugin(scope.withTypeProvider<TypeBoxTypeProvider>(), opts);
  };
}
