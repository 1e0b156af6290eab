import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { RESOURCE_TYPES, type AccountService } from '../../../domain/accounts/account-service.js';
import type { AccessLevel } from '../../../store/types.js';
import { Body, LIMITS, StringEnum } from '../../schemas/common.js';

const KeyBody = Body({
  name: Type.Optional(Type.String({ maxLength: 200 })),
  expires_at_ms: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: LIMITS.maxTimeMs }), Type.Null()])),
});

const LEVELS = { ACCESS_LEVEL_NONE: 'none', ACCESS_LEVEL_READ: 'read', ACCESS_LEVEL_WRITE: 'write' } as const;

const RestrictedBody = Body({
  name: Type.Optional(Type.String({ maxLength: 200 })),
  expires_at_ms: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: LIMITS.maxTimeMs }), Type.Null()])),
  scopes: Type.Optional(
    Type.Array(
      Type.Object({
        resource_type: StringEnum([...RESOURCE_TYPES]),
        access_level: StringEnum(['ACCESS_LEVEL_NONE', 'ACCESS_LEVEL_READ', 'ACCESS_LEVEL_WRITE']),
      }),
      { maxItems: 50 },
    ),
  ),
});

/** Creating keys needs write on RESOURCE_TYPE_ACCOUNT (a standard key always has it). */
export function apiKeyRoutes(app: FastifyInstance, accounts: AccountService): void {
  const config = { resource: 'RESOURCE_TYPE_ACCOUNT' as const };

  app.post('/v1/apikeys', { config, schema: { body: KeyBody } }, async (req) => {
    const body = (req.body ?? {}) as Static<typeof KeyBody>;
    const { key, secret } = accounts.createKey(req.principal.accountId, {
      name: body.name,
      kind: 'standard',
      expiresAtMs: body.expires_at_ms,
    });
    return { id: key.id, name: key.name ?? undefined, key_secret: secret, expires_at_ms: key.expiresAtMs };
  });

  app.post('/v1/restricted_keys', { config, schema: { body: RestrictedBody } }, async (req) => {
    const body = (req.body ?? {}) as Static<typeof RestrictedBody>;
    const scopes = (body.scopes ?? []).map((s) => ({
      resourceType: s.resource_type,
      accessLevel: LEVELS[s.access_level] as AccessLevel,
    }));
    const { key, secret } = accounts.createKey(req.principal.accountId, {
      name: body.name,
      kind: 'restricted',
      expiresAtMs: body.expires_at_ms,
      scopes,
    });
    return {
      id: key.id,
      name: key.name ?? undefined,
      key_secret: secret,
      expires_at_ms: key.expiresAtMs,
      scopes: body.scopes ?? [],
    };
  });
}
