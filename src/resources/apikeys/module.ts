import type { Module } from '../../host.js';
import { accountsModule } from '../accounts/index.js';
import { apiKeyRoutes } from './routes/index.js';

/** API keys: create, list, revoke (stored and checked by the accounts module). */
export const apiKeysModule: Module = {
  name: 'apikeys',
  needs: [accountsModule],
  build: () => ({}),
  routes: (app, s) => app.register(apiKeyRoutes, { accounts: s.accounts }),
};
