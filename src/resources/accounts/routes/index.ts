import { Type } from 'typebox';
import type { AccountService } from '../account-service.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** AccountView: one account, one tier, no billing here. */
const AccountViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    account_status: Type.String(),
    tier: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    billing: Type.Object({ account_billing_type: Type.String(), aws: Type.Null(), stripe: Type.Null() }),
  },
  { title: 'AccountView', description: 'the account' },
);

/** The account route in the API reference (/docs). */
const operations: OperationDocs = {
  tag: 'Accounts',
  operations: {
    'GET /v1/accounts/me': {
      sdk: ['accounts.me'],
      summary: "Get the caller's account",
      description: 'The account the API key belongs to: its id, name and creation time. devboxd bills nothing, so billing is empty.',
    },
  },
};

/** The caller's account; RESOURCE_TYPE_ACCOUNT read on a restricted key. */
export const accountRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', operations, (app, opts: { accounts: AccountService }) => {
  app.get('/v1/accounts/me', { schema: { response: replies(AccountViewSchema) } }, async (req) => {
    const a = await opts.accounts.getAccount(req.principal.accountId);
    return {
      id: a.id,
      name: a.name,
      account_status: 'ACCOUNT_STATUS_ENABLED',
      tier: 'ACCOUNT_TIER_ENTERPRISE',
      created_at: new Date(a.createTimeMs).toISOString(),
      billing: { account_billing_type: 'UNRECOGNIZED', aws: null, stripe: null },
    };
  });
});
