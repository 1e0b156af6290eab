import type { AccountService } from '../../accounts/index.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { PageQuerySchema, pageEnvelope, pageSchema, replies, toPageQuery } from '../../../platform/http/schemas/common.js';
import { KeyIdParams, KeyViewSchema, toKeyView } from './schemas.js';

/**
 * Listing and revoking keys (the SDK has no methods for these; the paths follow Runloop's conventions: a
 * cursor-paginated GET on the collection, `POST …/{id}/delete`). One collection holds both kinds.
 */
const ListView = pageSchema('api_keys', KeyViewSchema);

export function manageRoutes(app: Api, accounts: AccountService): void {
  app.get('/v1/apikeys', { schema: { querystring: PageQuerySchema, response: replies(ListView) } }, async (req) => {
    const page = await accounts.listKeys(req.principal.accountId, toPageQuery(req.query));
    return pageEnvelope('api_keys', { ...page, items: page.items.map(toKeyView) });
  });

  app.post('/v1/apikeys/:id/delete', { schema: { params: KeyIdParams, response: replies(KeyViewSchema) } }, async (req) => {
    const { id } = req.params;
    return toKeyView(await accounts.revokeKey(req.principal, id));
  });
}
