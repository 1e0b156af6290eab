import { Type } from 'typebox';
import { RESOURCE_TYPES } from '../../../domain/accounts/account-service.js';
import type { AccessLevel, ApiKey, Scope } from '../../../store/types.js';
import { StringEnum } from '../../schemas/common.js';

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

export const KeyIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const toScopes = (wire: { resource_type: string; access_level: WireLevel }[]): Scope[] =>
  wire.map((s) => ({ resourceType: s.resource_type, accessLevel: LEVELS[s.access_level] as AccessLevel }));

const toWireScopes = (scopes: Scope[]) =>
  scopes.map((s) => ({ resource_type: s.resourceType, access_level: WIRE_LEVEL[s.accessLevel] }));

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
