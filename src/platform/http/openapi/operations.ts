import type { RouteOptions } from 'fastify';

/** An operation as the reference names it: method and OpenAPI path, `POST /v1/devboxes/{id}/execute_async`. */
export type OperationKey = `${'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'} /${string}`;

interface Described {
  /** One line, the operation's entry in the sidebar of /docs. */
  summary: string;
  /** What it does and what a caller must know: long-polls, event streams, what a retry does. */
  description: string;
  /** The section of /docs it belongs to, when not its table's. */
  tag?: string;
}

/**
 * How the reference shows one operation. `sdk` lists the official SDK's methods that send this request, as
 * called on the client, the shortest first (`devboxes.listDiskSnapshots` before
 * `devboxes.diskSnapshots.list`): the first names the operation. `own` marks an operation of devboxd's that
 * the SDK has no method for, named the way the SDK names its methods (`repositories.listInspections`).
 */
export type OperationDoc = Described & ({ sdk: readonly [string, ...string[]] } | { own: string });

/** A resource's operations, by key, and the section of /docs they make. */
export interface OperationDocs {
  tag: string;
  operations: Readonly<Record<OperationKey, OperationDoc>>;
}

/**
 * The operation id: the SDK method with `_` for `.` (`devboxes_executions_executeAsync`), or `devboxd_` and
 * the same for devboxd's own (`devboxd_repositories_listInspections`). Code generators make method names of
 * these, so a generated client reads like the official one.
 */
export const operationId = (doc: OperationDoc): string => ('sdk' in doc ? doc.sdk[0] : `devboxd.${doc.own}`).replaceAll('.', '_');

/** The description /docs shows: the table's text, then how the SDK reaches it. */
function fullDescription(doc: OperationDoc): string {
  const how =
    'sdk' in doc
      ? `SDK: ${doc.sdk.map((m) => `\`client.${m}()\``).join(', ')}.`
      : "devboxd's own: the official SDK has no method for it (its `client.get()` and `client.post()` reach it).";
  return `${doc.description}\n\n${how}`;
}

/** `/v1/devboxes/:id` as OpenAPI writes it: `/v1/devboxes/{id}`. */
const openapiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/**
 * Gives a route its operation id, summary, description, tag and `x-sdk-methods` from `docs`, from an
 * `onRoute` hook. Only the document reads these keys: the parts Fastify validates and serializes with
 * (`body`, `querystring`, `params`, `response`) stay the very objects the route declared. The schema is
 * replaced, never changed in place, since route files may share one schema object between routes.
 */
export function describeOperation(route: RouteOptions, docs: OperationDocs): void {
  const schema = route.schema as Record<string, unknown> | undefined;
  if (schema?.hide || typeof route.method !== 'string' || route.method === 'HEAD') return;
  const doc = docs.operations[`${route.method} ${openapiPath(route.url)}` as OperationKey];
  if (!doc) return;
  route.schema = {
    ...schema,
    operationId: operationId(doc),
    summary: doc.summary,
    description: fullDescription(doc),
    tags: [doc.tag ?? docs.tag],
    ...('sdk' in doc ? { 'x-sdk-methods': doc.sdk } : {}),
  };
}
