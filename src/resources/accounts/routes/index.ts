import { Type } from 'typebox';
import type { AccountService } from '../account-service.js';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';

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
  { description: 'AccountView' },
);

/** The caller's account; RESOURCE_TYPE_ACCOUNT read on a restricted key. */
export const accountRoutes = resourceModule('RESOURCE_TYPE_ACCOUNT', (app, opts: { accounts: AccountService }) => {
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
