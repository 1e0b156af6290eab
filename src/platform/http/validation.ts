import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import type { FastifyInstance } from 'fastify';
import fastJsonStringify, { type Schema } from 'fast-json-stringify';

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

const bodies = withKeywords(new Ajv({ ...common, coerceTypes: false }));
const text = withKeywords(new Ajv({ ...common, coerceTypes: 'array' }));

/**
 * Compiled validators and serializers, kept per schema object for the life of the process. Route schemas are
 * module constants, so each is compiled once however many apps a process builds (the in-process tests build
 * one or more per file). Each is compiled at its route's first request, not when the route is registered:
 * compiling all of them took about 0.7 s of every server start, for routes most runs never call.
 */
const bodyValidators = new WeakMap<object, ValidateFunction>();
const textValidators = new WeakMap<object, ValidateFunction>();
const serializers = new WeakMap<object, (data: unknown) => string>();

function once<T>(cache: WeakMap<object, T>, schema: object, compile: () => T): T {
  let made = cache.get(schema);
  if (!made) cache.set(schema, (made = compile()));
  return made;
}

type LazyValidator = ((data: unknown, cxt?: unknown) => boolean) & { errors?: ErrorObject[] | null; schemaEnv: true };

/**
 * A validator that compiles on its first call. It says it has a `schemaEnv` as Ajv's own functions do, so
 * Fastify passes the parent object along and defaults or coercions of the whole part land on the request;
 * the last call's `errors` are copied where Fastify reads them.
 */
function lazyValidator(get: () => ValidateFunction): LazyValidator {
  const validate = ((data: unknown, cxt?: unknown) => {
    const fn = get();
    const ok = (fn as (d: unknown, c?: unknown) => boolean)(data, cxt);
    validate.errors = fn.errors ?? null;
    return ok;
  }) as LazyValidator;
  validate.schemaEnv = true;
  return validate;
}

export function registerValidation(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const [cache, ajv] = httpPart === 'body' ? [bodyValidators, bodies] : [textValidators, text];
    return lazyValidator(() => once(cache, schema, () => ajv.compile(schema as SchemaObject)));
  });
  // Fastify's own default, fast-json-stringify with no shared schemas (the routes add none), made at first use.
  app.setSerializerCompiler(
    ({ schema }) =>
      (data: unknown) =>
        once(serializers, schema, () => fastJsonStringify(schema as Schema))(data),
  );
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
