import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../../domain/accounts/account-service.js';
import { createRoutes } from './create.js';
import { manageRoutes } from './manage.js';

/**
 * API keys: RESOURCE_TYPE_ACCOUNT governs them (read to list, write to create or revoke; a standard key
 * always has both).
 */
export async function apiKeyRoutes(scope: FastifyInstance, opts: { accounts: AccountService }): Promise<void> {
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), resource: 'RESOURCE_TYPE_ACCOUNT' } as typeof route.config;
  });
  createRoutes(scope, opts.accounts);
  manageRoutes(scope, opts.accounts);
}
