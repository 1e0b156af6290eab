import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { AccountService } from '../../../domain/accounts/account-service.js';
import { PageQuerySchema, pageEnvelope, toPageQuery } from '../../schemas/common.js';
import { KeyIdParams, toKeyView } from './schemas.js';

/**
 * Listing and revoking keys (the SDK has no methods for these; the paths follow Runloop's conventions: a
 * cursor-paginated GET on the collection, `POST …/{id}/delete`). One collection holds both kinds.
 */
export function manageRoutes(app: FastifyInstance, accounts: AccountService): void {
  app.get('/v1/apikeys', { schema: { querystring: PageQuerySchema } }, async (req) => {
    const page = await accounts.listKeys(req.principal.accountId, toPageQuery(req.query as Static<typeof PageQuerySchema>));
    return pageEnvelope('api_keys', { ...page, items: page.items.map(toKeyView) });
  });

  app.post('/v1/apikeys/:id/delete', { schema: { params: KeyIdParams } }, async (req) => {
    const { id } = req.params as Static<typeof KeyIdParams>;
    return toKeyView(await accounts.revokeKey(req.principal, id));
  });
}
