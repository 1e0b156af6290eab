import { Type, type TSchema } from 'typebox';

/** A string enum as JSON Schema `enum` (clear validation messages, plain OpenAPI). */
export const StringEnum = <T extends string[]>(values: [...T], opts: { description?: string; default?: T[number] } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: values, ...opts });

export const StringMap = Type.Record(Type.String(), Type.String());

/** Query of every cursor-paginated list (Runloop names). */
export const PageQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 20 })),
  starting_after: Type.Optional(Type.String()),
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

/** The list envelope the SDK paginates: `{<items>: [...], has_more, total_count}`. */
export const pageSchema = (itemsKey: string, item: TSchema) =>
  Type.Object({ [itemsKey]: Type.Array(item), has_more: Type.Boolean(), total_count: Type.Optional(Type.Integer()) });

export function pageEnvelope<T>(itemsKey: string, page: { items: T[]; hasMore: boolean; totalCount?: number }) {
  return { [itemsKey]: page.items, has_more: page.hasMore, total_count: page.totalCount };
}

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const MessageSchema = Type.Object({ message: Type.String() });
