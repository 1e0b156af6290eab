import { Type, type Static, type TArray, type TSchema } from 'typebox';
import { MAX_BYTES_KEYWORD } from '../validation.js';

/** A string enum as JSON Schema `enum` (clear validation messages, plain OpenAPI). */
export const StringEnum = <T extends string[]>(values: [...T], opts: { description?: string; default?: T[number] } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: values, ...opts });

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
/** An optional field the SDK may send as null, which means "not given". */
export const Opt = <T extends TSchema>(t: T) => Type.Optional(Nullable(t));

/** Text that becomes a process argument or environment value: the kernel cannot carry a NUL there. */
export const ArgString = (opts: { minLength?: number; maxLength: number }) => Type.String({ ...opts, pattern: '^[^\\u0000]*$' });

/** Stored text: no NUL, which PostgreSQL text cannot hold (refused up front on either store). */
export const Text = (maxLength: number) => Type.String({ maxLength, pattern: '^[^\\u0000]*$' });

/**
 * Documented bounds of free-form input. Everything stored is returned on every read of its resource, so
 * each field, and each map as a whole, has a ceiling that keeps a record small enough to render.
 */
export const LIMITS = {
  name: 256,
  metadata: { keys: 50, keyLength: 128, valueLength: 1024, totalBytes: 16 * 1024 },
  environment: { keys: 256, keyLength: 256, valueLength: 32 * 1024, totalBytes: 128 * 1024 },
  launchParametersBytes: 256 * 1024,
  /** Seconds in a timer field (keep-alive, idle): ten years. */
  maxSeconds: 315_360_000,
  /** Latest instant accepted as a time in ms (the end of year 9999). */
  maxTimeMs: 253_402_300_799_999,
} as const;

/** `metadata`: string → string, bounded in count, key and value length and total size. */
export const Metadata = Type.Unsafe<Record<string, string>>({
  type: 'object',
  propertyNames: { minLength: 1, maxLength: LIMITS.metadata.keyLength, pattern: '^[^\\u0000]*$' },
  additionalProperties: { type: 'string', maxLength: LIMITS.metadata.valueLength, pattern: '^[^\\u0000]*$' },
  maxProperties: LIMITS.metadata.keys,
  [MAX_BYTES_KEYWORD]: LIMITS.metadata.totalBytes,
});

/** Environment variable name → value (no NUL: it could never reach a process). */
export const EnvironmentMap = Type.Unsafe<Record<string, string>>({
  type: 'object',
  propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: LIMITS.environment.keyLength },
  additionalProperties: { type: 'string', maxLength: LIMITS.environment.valueLength, pattern: '^[^\\u0000]*$' },
  maxProperties: LIMITS.environment.keys,
  [MAX_BYTES_KEYWORD]: LIMITS.environment.totalBytes,
});

/** Environment variable name → secret id or name (a create's, a run profile's, an agent config's `secrets`). */
export const SecretRefsMap = (description = 'environment variable name → secret name (or id)') =>
  Type.Unsafe<Record<string, string>>({
    type: 'object',
    propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 256 },
    additionalProperties: { type: 'string', minLength: 1, maxLength: 256 },
    maxProperties: 256,
    description,
  });

/** Query of every cursor-paginated list (Runloop names). */
export const PageQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 20 })),
  starting_after: Type.Optional(Text(200)),
  include_total_count: Type.Optional(Type.Boolean({ default: true })),
});

export interface PageQueryWire {
  limit?: number;
  starting_after?: string;
  include_total_count?: boolean;
}

export const toPageQuery = (q: PageQueryWire) => ({
  limit: q.limit ?? 20,
  startingAfter: q.starting_after || undefined,
  includeTotalCount: q.include_total_count ?? true,
});

/**
 * The list envelope the SDK paginates: `{<items>: [...], has_more, total_count}`. A page of a titled view is
 * titled as the SDK names it (`DevboxView` → `DevboxListView`), so the reference shows it once, by name.
 */
export const pageSchema = <K extends string, T extends TSchema>(itemsKey: K, item: T) => {
  const itemTitle = (item as { title?: string }).title;
  return Type.Object(
    {
      ...({ [itemsKey]: Type.Array(item) } as Record<K, TArray<T>>),
      has_more: Type.Boolean(),
      total_count: Type.Optional(Type.Integer()),
    },
    {
      description: `a page of ${itemsKey} (has_more: whether more follow the last)`,
      ...(itemTitle?.endsWith('View') ? { title: `${itemTitle.slice(0, -'View'.length)}ListView` } : {}),
    },
  );
};

export function pageEnvelope<K extends string, T>(itemsKey: K, page: { items: T[]; hasMore: boolean; totalCount?: number }) {
  return { [itemsKey]: page.items, has_more: page.hasMore, total_count: page.totalCount } as Record<K, T[]> & {
    has_more: boolean;
    total_count?: number;
  };
}

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const MessageSchema = Type.Object({ message: Type.String() });

/*
 * Response schemas. Fastify serializes with them (fast-json-stringify), which writes only the properties a
 * schema names and converts values to the declared type: each one describes exactly what its view returns.
 */

/** A primitive or enum that may be null, as `type: [t, "null"]` (serialized natively; plain OpenAPI 3.1). */
export const OrNull = <T extends TSchema>(t: T) => {
  const { type, enum: values, ...rest } = t as unknown as { type: string; enum?: unknown[] };
  return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'], ...(values ? { enum: [...values, null] } : {}) });
};

/** Integers the API returns (times in ms, sizes, exit codes). */
export const Int = Type.Integer();

/** string → string maps (`metadata`). */
export const StringMap = Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' } });

/** `{message, error}`: every 4xx and 5xx (see the error handler). */
export const ErrorSchema = Type.Object(
  { message: Type.String(), error: Type.String({ description: 'error code, e.g. not_found, invalid_request' }) },
  { title: 'Error', description: 'an error' },
);

/** The error answers every route may give. */
export const ERROR_RESPONSES = { '4xx': ErrorSchema, '5xx': ErrorSchema } as const;

/** Response schemas of a JSON route: its 200 view and the error shape. */
export const replies = <T extends TSchema>(ok: T) => ({ 200: ok, ...ERROR_RESPONSES });

/** An empty JSON object (`keep_alive`, `upload_file`). */
export const EmptyObject = Type.Object({});

/** A request body object: unknown fields are a 400 naming them, never silently dropped. */
export const Body = <P extends Record<string, TSchema>>(properties: P) => Type.Object(properties, { additionalProperties: false });
