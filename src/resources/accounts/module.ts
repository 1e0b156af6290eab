import type { Module } from '../../host.js';
import { AccountService } from './account-service.js';
import { ACCOUNT_COMMANDS } from './commands.js';
import { accountRoutes } from './routes/index.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    accounts: AccountService;
  }
}

/** Accounts and their keys' authentication (every request's principal comes from here). */
export const accountsModule: Module = {
  name: 'accounts',
  build: ({ host }) => ({ accounts: new AccountService(host.store) }),
  routes: (app, s) => app.register(accountRoutes, { accounts: s.accounts }),
  commands: ACCOUNT_COMMANDS,
};
