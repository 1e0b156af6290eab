import type { AccountService } from '../../../domain/accounts/account-service.js';
import { resourceModule } from '../../resource-module.js';
import { createRoutes } from './create.js';
import { manageRoutes } from './manage.js';

/**
 * API keys: RESOURCE_TYPE_ACCOUNT governs them (read to list, write to create or revoke; a standard key
 * always has both).
 */
export const apiKeyRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', (scope, opts: { accounts: AccountService }) => {
  createRoutes(scope, opts.accounts);
  manageRoutes(scope, opts.accounts);
});
