import { Type } from 'typebox';
import type { AccountService } from '../../accounts/account-service.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, LIMITS, Opt, replies } from '../../../platform/http/schemas/common.js';
import { CreatedKeySchema, ScopeSchema, toScopes } from './schemas.js';

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

/** Minting keys; the caller's key bounds what it may mint (a restricted key never mints a wider one). */
export function createRoutes(app: Api, accounts: AccountService): void {
  // Outside x-request-id replay: a stored answer would keep a key's secret in the database (only digests
  // are stored). A retried create may mint a second key; the list shows it and it can be revoked.
  app.post('/v1/apikeys', { schema: { body: KeyBody, response: replies(CreatedKeySchema) }, config: { idempotent: false } }, async (req) => {
    const body = req.body ?? {};
    const { key, secret } = await accounts.createKey(
      req.principal.accountId,
      { name: body.name, kind: 'standard', expiresAtMs: body.expires_at_ms },
      req.principal,
    );
    return { id: key.id, name: key.name ?? undefined, key_secret: secret, expires_at_ms: key.expiresAtMs };
  });

  const restricted = { schema: { body: RestrictedBody, response: replies(CreatedKeySchema) }, config: { idempotent: false } };
  app.post('/v1/restricted_keys', restricted, async (req) => {
    const body = req.body ?? {};
    const { key, secret } = await accounts.createKey(
      req.principal.accountId,
      { name: body.name, kind: 'restricted', expiresAtMs: body.expires_at_ms, scopes: toScopes(body.scopes ?? []) },
      req.principal,
    );
    return {
      id: key.id,
      name: key.name ?? undefined,
      key_secret: secret,
      expires_at_ms: key.expiresAtMs,
      scopes: body.scopes ?? [],
    };
  });
}
