import { Type } from 'typebox';
import { Body, Int, pageSchema } from '../../../platform/http/schemas/common.js';
import { SECRET_NAME_MAX, SECRET_NAME_RULE, SECRET_VALUE_MAX_BYTES } from '../secret-service.js';
import type { Secret } from '../types.js';

// The name's rule and the value's bounds are checked by the service, whose messages name the rule and
// never show the value; the schemas only bound the sizes so nothing unbounded reaches it.
const Name = Type.String({ maxLength: SECRET_NAME_MAX, description: `${SECRET_NAME_RULE}; unique in the account` });
const Value = Type.String({
  description: `at most ${SECRET_VALUE_MAX_BYTES} bytes, no NUL; stored encrypted and never returned`,
});

export const CreateSecretBody = Body({ name: Name, value: Value });
export const UpdateSecretBody = Body({ value: Value });
export const SecretNameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: SECRET_NAME_MAX }) });
export const SecretListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 20 })),
  starting_after: Type.Optional(Type.String({ maxLength: 200 })),
  include_total_count: Type.Optional(Type.Boolean({ default: true })),
});

export const SecretViewSchema = Type.Object(
  { id: Type.String(), name: Type.String(), create_time_ms: Int, update_time_ms: Int },
  { title: 'SecretView', description: 'a secret; its value is never returned' },
);
export const SecretListView = pageSchema('secrets', SecretViewSchema);

export const toView = (s: Secret) => ({ id: s.id, name: s.name, create_time_ms: s.createTimeMs, update_time_ms: s.updateTimeMs });
