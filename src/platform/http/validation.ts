import { Ajv, type ErrorObject, type SchemaObject } from 'ajv';
import type { FastifyInstance } from 'fastify';

/**
 * Request validation with two Ajv instances. Bodies are JSON and arrive typed, so they are never coerced:
 * `{"command": true}` or `{"name": null}` mean what they say and get a 400 or their documented meaning.
 * Query strings and path parameters are text on the wire, so they keep Ajv's coercion (`?limit=5` → 5).
 */

/** Largest serialized size of a value, for free-form fields whose parts are bounded but whose sum must be too. */
export const MAX_BYTES_KEYWORD = 'x-max-bytes';

function withKeywords(ajv: Ajv): Ajv {
  ajv.addKeyword({
    keyword: MAX_BYTES_KEYWORD,
    schemaType: 'number',
    errors: true,
    validate: function check(max: number, data: unknown) {
      const size = Buffer.byteLength(JSON.stringify(data) ?? '');
      if (size <= max) return true;
      (check as unknown as { errors: Partial<ErrorObject>[] }).errors = [
        { keyword: MAX_BYTES_KEYWORD, message: `must be at most ${max} bytes as JSON (is ${size})`, params: { limit: max } },
      ];
      return false;
    },
  });
  return ajv;
}

const common = { useDefaults: true, removeAdditional: false, allErrors: false, strict: false, addUsedSchema: false } as const;

export function registerValidation(app: FastifyInstance): void {
  const bodies = withKeywords(new Ajv({ ...common, coerceTypes: false }));
  const text = withKeywords(new Ajv({ ...common, coerceTypes: 'array' }));
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodies : text).compile(schema as SchemaObject));
}

/** `body.launch_parameters.custom_cpu_cores` style names for the first validation error. */
export function describeValidationError(first: ErrorObject | undefined, where: string, fallback: string): string {
  if (!first) return `invalid ${where}: ${fallback}`;
  const field = first.instancePath ? first.instancePath.slice(1).split('/').join('.') : '';
  const params = first.params as { missingProperty?: string; additionalProperty?: string };
  if (first.keyword === 'additionalProperties' && params.additionalProperty) {
    const name = [where, field, params.additionalProperty].filter(Boolean).join('.');
    return `${name} is not a supported parameter`;
  }
  const name = [where, field, params.missingProperty].filter(Boolean).join('.');
  return `invalid ${name}: ${first.message ?? fallback}`;
}
