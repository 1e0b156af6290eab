import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ResourceType } from '../auth/principal.js';
import './plugins/context.js';

/** The instance route files register on: request types come from the TypeBox schemas, no casts. */
export type Api = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/**
 * A resource module: a plugin whose routes all need one resource type on a restricted key, declared here
 * once. A route may still name its own (`config.resource`), e.g. a snapshot route under /v1/devboxes.
 * Routes outside any module must say `auth: false` or name a resource type, or the server refuses to start
 * (see `registerAuth`).
 *
 * @example
 * export const devboxRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', (scope, opts: DevboxRouteOptions) => { … });
 * await app.register(devboxRoutes, { devboxes });
 */
export function resourceModule<O>(resource: ResourceType, plugin: (scope: Api, opts: O) => void | Promise<void>) {
  return async (scope: FastifyInstance, opts: O): Promise<void> => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, resource: route.config?.resource ?? resource } as typeof route.config;
    });
    await plugin(scope.withTypeProvider<TypeBoxTypeProvider>(), opts);
  };
}
