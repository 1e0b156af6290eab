import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../domain/accounts/account-service.js';
import { ERRORS } from '../../domain/errors.js';
import './context.js';

/**
 * Every route requires `Authorization: Bearer <key>` unless its config says `auth: false`. The key is looked
 * up on every request (no cache), so a revocation holds from the next request on.
 */
export function registerAuth(app: FastifyInstance, accounts: AccountService): void {
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (req) => {
    const config = req.routeOptions.config;
    if (config?.auth === false || !req.routeOptions.url) return;
    const header = req.headers.authorization;
    if (!header) throw ERRORS.unauthenticated('missing Authorization header: send "Authorization: Bearer <API key>"');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw ERRORS.unauthenticated('malformed Authorization header: expected "Bearer <API key>"');
    const principal = await accounts.authenticate(match[1]!);
    if (config?.resource) {
      const level = config.access ?? (req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write');
      accounts.authorize(principal, config.resource, level);
    }
    for (const need of config?.alsoNeeds ?? []) accounts.authorize(principal, need.resource, need.access);
    req.principal = principal;
  });
}
