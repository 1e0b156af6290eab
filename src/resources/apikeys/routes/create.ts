import { Type } from 'typebox';
import type { AccountService } from '../../accounts/index.js';
import type { ApiKey } from '../../../platform/store/types.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, LIMITS, Opt, replies } from '../../../platform/http/schemas/common.js';
import { CreatedKeySchema, ScopeSchema, toScopes, toWireScopes } from './schemas.js';

const ExpiresAt = Opt(Type.Integer({ minimum: 0, maximum: LIMITS.maxTimeMs }));

const KeyBody = Body({
  name: Opt(Type.String({ maxLength: 200 })),
  expires_at_ms: ExpiresAt,
});

const RestrictedBody = Body({
  name: Opt(Type.String({ maxLength: 200 })),
  expires_at_ms: ExpiresAt,
  scopes: Type.Optional(Type.Array(ScopeSchema, { maxItems: 50 })),
});

/**
 * Minting keys; the caller's key bounds what it may mint (a restricted key never mints a wider one). Both
 * routes replay a retried x-request-id: the answer (which holds the new secret) is kept sealed under the
 * server's secret key for the replay window, then dropped, so a lost answer never leaves an unseen key behind.
 */
export function createRoutes(app: Api, accounts: AccountService): void {
  // A restricted key with account write may call it too (the interface says so): what it mints is a restricted
  // key with the creator's own scopes, never wider, and its answer and the key list say so (kind, scopes).
  app.post('/v1/apikeys', { schema: { body: KeyBody, response: replies(CreatedKeySchema) }, config: { idempotent: 'sealed' } }, async (req) => {
    const body = req.body ?? {};
    const by = req.principal;
    const capped = by.kind === 'restricted';
    const kind = capped ? 'restricted' : 'standard';
    return created(await accounts.createKey(by.accountId, { name: body.name, kind, expiresAtMs: body.expires_at_ms, scopes: capped ? by.scopes : [] }, by));
  });

  const restricted = { schema: { body: RestrictedBody, response: replies(CreatedKeySchema) }, config: { idempotent: 'sealed' as const } };
  app.post('/v1/restricted_keys', restricted, async (req) => {
    const body = req.body ?? {};
    const scopes = toScopes(body.scopes ?? []);
    return created(
      await accounts.createKey(req.principal.accountId, { name: body.name, kind: 'restricted', expiresAtMs: body.expires_at_ms, scopes }, req.principal),
    );
  });
}

/** The created view: the only answer that shows the secret. A standard key's view lists no scopes (it has all). */
function created({ key, secret }: { key: ApiKey; secret: string }) {
  return {
    id: key.id,
    name: key.name ?? undefined,
    key_secret: secret,
    expires_at_ms: key.expiresAtMs,
    kind: key.kind,
    scopes: key.kind === 'restricted' ? toWireScopes(key.scopes) : undefined,
  };
}
