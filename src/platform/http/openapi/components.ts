/**
 * Shared components of the OpenAPI document. A view schema names itself with `title` (the SDK's type name,
 * `DevboxView`): a JSON Schema annotation, which neither Ajv nor fast-json-stringify reads, so validation
 * and serialization stay exactly as they are. Once @fastify/swagger has built the document, every schema
 * with a title moves to `components.schemas` under that title, and a `$ref` stands where it was: each view
 * is written once, and /docs shows it by name.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Document {
  paths?: unknown;
  components?: { schemas?: object };
}

const REF = '#/components/schemas/';

/** A schema, as opposed to a map of them (`properties`) or a value (`default`, `examples`). */
const isTitledSchema = (v: JsonObject): v is JsonObject & { title: string } =>
  typeof v.title === 'string' && ('type' in v || 'properties' in v || 'anyOf' in v || 'oneOf' in v || 'allOf' in v);

/** JSON with keys in order: two schemas that say the same compare equal. */
function canonical(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k]!)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * `OrNull(View)` writes the view with `type: ['object', 'null']`: that is the component or null, which
 * OpenAPI 3.1 says as `anyOf` of the reference and `{type: 'null'}`.
 */
function nullableOf(schema: JsonObject): JsonObject | undefined {
  const type = schema.type;
  if (!Array.isArray(type) || type.length !== 2 || type[1] !== 'null' || typeof type[0] !== 'string') return undefined;
  return { ...schema, type: type[0] };
}

/**
 * Moves the titled schemas of `doc.paths` to `components.schemas`; see the file's comment. It builds new
 * objects and changes none of those @fastify/swagger built, so it need not know which of them it copied
 * from the routes' schemas. About 50 ms, once per process, on the first request for the document.
 */
export function shareTitledSchemas<D extends Document>(doc: D): D {
  const components = (doc.components ??= {});
  const shared = (components.schemas ??= {}) as Record<string, Json>;
  const seen = new Map<string, string>(Object.entries(shared).map(([name, s]) => [name, canonical(s)]));

  const visit = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(visit);
    if (!node || typeof node !== 'object') return node;
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(node)) out[k] = visit(v);
    if (!isTitledSchema(out)) return out;
    const name = out.title;
    const plain = nullableOf(out);
    const component = plain ?? out;
    const ref: Json = plain ? { anyOf: [{ $ref: `${REF}${name}` }, { type: 'null' }] } : { $ref: `${REF}${name}` };
    const text = canonical(component);
    const known = seen.get(name);
    if (known === undefined) {
      shared[name] = component;
      seen.set(name, text);
      return ref;
    }
    // Two different schemas under one title stay where they are (test/fast/openapi.test.ts finds them).
    return known === text ? ref : out;
  };

  doc.paths = visit(doc.paths as Json);
  return doc;
}
