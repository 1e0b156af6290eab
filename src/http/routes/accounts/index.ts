import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../../domain/accounts/account-service.js';

export function accountRoutes(app: FastifyInstance, accounts: AccountService): void {
  app.get('/v1/accounts/me', { config: { resource: 'RESOURCE_TYPE_ACCOUNT' } }, async (req) => {
    const a = await accounts.getAccount(req.principal.accountId);
    return {
      id: a.id,
      name: a.name,
      account_status: 'ACCOUNT_STATUS_ENABLED',
      tier: 'ACCOUNT_TIER_ENTERPRISE',
      created_at: new Date(a.createTimeMs).toISOString(),
      billing: { account_billing_type: 'UNRECOGNIZED', aws: null, stripe: null },
    };
  });
}
