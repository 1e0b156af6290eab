import type { AccountService } from '../../accounts/index.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { createRoutes } from './create.js';
import { manageRoutes } from './manage.js';
import { apiKeyOperations } from './operations.js';

/**
 * API keys: RESOURCE_TYPE_ACCOUNT governs them (read to list, write to create or revoke; a standard key
 * always has both).
 */
export const apiKeyRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', apiKeyOperations, (scope, opts: { accounts: AccountService }) => {
  createRoutes(scope, opts.accounts);
  manageRoutes(scope, opts.accounts);
});
