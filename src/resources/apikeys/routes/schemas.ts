import { Type } from 'typebox';
import { RESOURCE_TYPES } from '../../../platform/auth/principal.js';
import type { AccessLevel, ApiKey, Scope } from '../../../platform/store/types.js';
import { Int, OrNull, StringEnum } from '../../../platform/http/schemas/common.js';

/** Wire access levels (Runloop names) and the domain's. */
export const LEVELS = { ACCESS_LEVEL_NONE: 'none', ACCESS_LEVEL_READ: 'read', ACCESS_LEVEL_WRITE: 'write' } as const;
type WireLevel = keyof typeof LEVELS;
const WIRE_LEVEL: Record<AccessLevel, WireLevel> = { none: 'ACCESS_LEVEL_NONE', read: 'ACCESS_LEVEL_READ', write: 'ACCESS_LEVEL_WRITE' };

export const ScopeSchema = Type.Object(
  {
    resource_type: StringEnum([...RESOURCE_TYPES]),
    access_level: StringEnum(['ACCESS_LEVEL_NONE', 'ACCESS_LEVEL_READ', 'ACCESS_LEVEL_WRITE']),
  },
  { additionalProperties: false },
);

/** A scope as the API shows it (no additionalProperties: the request schema above refuses unknown fields). */
const ScopeView = Type.Object({ resource_type: Type.String(), access_level: Type.String() }, { title: 'ScopeEntryView' });

/** What creating a key answers: the only time its secret is shown. */
export const CreatedKeySchema = Type.Object(
  {
    id: Type.String(),
    name: Type.Optional(Type.String()),
    key_secret: Type.String(),
    expires_at_ms: OrNull(Int),
    /** Not in Runloop's view: a key made by a restricted key is restricted too, whichever route made it. */
    kind: Type.Optional(StringEnum(['standard', 'restricted'])),
    scopes: Type.Optional(Type.Array(ScopeView)),
  },
  { title: 'APIKeyCreatedView', description: 'the new key: the only answer that shows its secret' },
);

/** A key in lists and revocations (`toKeyView`). */
export const KeyViewSchema = Type.Object(
  {
    id: Type.String(),
    name: OrNull(Type.String()),
    kind: StringEnum(['standard', 'restricted']),
    secret_last4: OrNull(Type.String()),
    scopes: Type.Array(ScopeView),
    create_time_ms: Int,
    expires_at_ms: OrNull(Int),
    revoked_at_ms: OrNull(Int),
  },
  { title: 'APIKeyView', description: 'a key (never its secret)' },
);

export const KeyIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const toScopes = (wire: { resource_type: string; access_level: WireLevel }[]): Scope[] =>
  wire.map((s) => ({ resourceType: s.resource_type, accessLevel: LEVELS[s.access_level] as AccessLevel }));

export const toWireScopes = (scopes: Scope[]) => scopes.map((s) => ({ resource_type: s.resourceType, access_level: WIRE_LEVEL[s.accessLevel] }));

/** A key as lists and revocations show it: never the secret (only its digest is stored), its last 4 characters. */
export function toKeyView(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    kind: k.kind,
    secret_last4: k.secretLast4,
    scopes: toWireScopes(k.scopes),
    create_time_ms: k.createTimeMs,
    expires_at_ms: k.expiresAtMs,
    revoked_at_ms: k.revokedAtMs,
  };
}
