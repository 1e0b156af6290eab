import { Type, type Static } from 'typebox';
import { Body, Int, Opt, OrNull, PageQuerySchema, StringEnum } from '../../../platform/http/schemas/common.js';
import { MAX_CUSTOM_HEADERS } from '../config-input.js';
import type { GatewayConfig, GatewayConfigInput } from '../types.js';

/** Text without NUL (PostgreSQL cannot store it), 1 to `max` characters. */
const Name = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: '^[^\\u0000]*$' });

export const AuthMechanismSchema = Body({
  type: StringEnum(['bearer', 'header', 'basic'], {
    description: 'bearer: Authorization: Bearer <secret>; header: <key>: <secret>; basic: Authorization: Basic base64(<secret>)',
  }),
  key: Opt(Type.String({ maxLength: 256 })),
});

const CustomHeaderSchema = Body({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  value: Opt(Type.String({ maxLength: 8192 })),
  secret: Opt(Name(256)),
});

const CustomHeaders = Type.Array(CustomHeaderSchema, { maxItems: MAX_CUSTOM_HEADERS });

export const CreateBody = Body({
  name: Name(256),
  endpoint: Type.String({ minLength: 1, maxLength: 2048 }),
  auth_mechanism: AuthMechanismSchema,
  custom_headers: Opt(CustomHeaders),
  description: Opt(Type.String({ maxLength: 4096, pattern: '^[^\\u0000]*$' })),
});

export const UpdateBody = Body({
  name: Opt(Name(256)),
  endpoint: Opt(Type.String({ minLength: 1, maxLength: 2048 })),
  auth_mechanism: Opt(AuthMechanismSchema),
  custom_headers: Opt(CustomHeaders),
  description: Opt(Type.String({ maxLength: 4096, pattern: '^[^\\u0000]*$' })),
});

export const ListQuery = Type.Intersect([
  PageQuerySchema,
  Type.Object({
    id: Type.Optional(Type.String({ maxLength: 200 })),
    name: Type.Optional(Type.String({ maxLength: 256, pattern: '^[^\\u0000]*$' })),
    search: Type.Optional(Type.String({ maxLength: 256, pattern: '^[^\\u0000]*$' })),
  }),
]);

export const GatewayConfigIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const AuthMechanismViewSchema = Type.Object(
  { type: Type.String(), key: Type.Optional(OrNull(Type.String())) },
  { title: 'AuthMechanism', description: 'how the gateway applies the credential' },
);

/** GatewayConfigView: custom headers show their name and, if secret-backed, the secret's id; never a value. */
export const GatewayConfigViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    endpoint: Type.String(),
    auth_mechanism: AuthMechanismViewSchema,
    create_time_ms: Int,
    account_id: OrNull(Type.String()),
    description: OrNull(Type.String()),
    custom_headers: Type.Array(Type.Object({ name: Type.String(), secret: Type.Optional(Type.String()) })),
  },
  { title: 'GatewayConfigView', description: 'a gateway config: an upstream API and how its credential is applied' },
);

export const authView = (a: GatewayConfig['auth']) => (a.key ? { type: a.type, key: a.key } : { type: a.type });

export function toView(c: GatewayConfig) {
  return {
    id: c.id,
    name: c.name,
    endpoint: c.endpoint,
    auth_mechanism: authView(c.auth),
    create_time_ms: c.createTimeMs,
    account_id: c.accountId || null,
    description: c.description,
    custom_headers: c.customHeaders.map((h) => (h.secretId ? { name: h.name, secret: h.secretId } : { name: h.name })),
  };
}

type Wire = Partial<Static<typeof CreateBody>> | Static<typeof UpdateBody>;

/** Wire names to the domain's; null means "not given" (on update: unchanged; `""` clears a description). */
export function toInput(b: Wire): GatewayConfigInput {
  return {
    name: b.name ?? undefined,
    endpoint: b.endpoint ?? undefined,
    auth: b.auth_mechanism ?? undefined,
    description: b.description ?? undefined,
    customHeaders: b.custom_headers ?? undefined,
  };
}
