import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './paths.js';

/**
 * The requests the installed official SDK (`@runloop/api-client`, the version package.json pins) sends, read
 * from its TypeScript sources: each resource class reachable from the client (`client.devboxes.executions`),
 * each of its methods, and each `this._client.<verb>(path` in that method's body, or in a helper of the
 * SDK's `lib/` the method calls (`awaitRunning` long-polls through `lib/devbox-state.ts`). Reading the
 * sources rather than a list keeps the OpenAPI document's operation ids tied to that version: a method the
 * SDK adds, renames or moves shows up here.
 */
export interface SdkCall {
  method: string;
  /** The path with each parameter as `{}`: `/v1/devboxes/{}/execute_async`. */
  path: string;
  /** The method's path on the client: `devboxes.executions.executeAsync`. */
  sdk: string;
}

const SRC = path.join(ROOT, 'node_modules/@runloop/api-client/src');
const CALL = /(?:this\._|\b)client\.(get|post|put|patch|delete|getAPIList)\(\s*(['"`])([^'"`]*)\2/g;
/** A method of a class body: two spaces in, as the SDK's formatter writes them. */
const METHOD = /^ {2}(?:async )?(\w+)\s*[<(]/gm;

const read = (file: string) => fs.readFileSync(file, 'utf8');
const verb = (v: string) => (v === 'getAPIList' ? 'GET' : v.toUpperCase());
const normal = (p: string) => p.replace(/\$\{[^}]*\}/g, '{}');

/** `import * as XAPI from './x.js'` in `file` → the file it names. */
function imported(file: string, alias: string): string {
  const m = read(file).match(new RegExp(`import \\* as ${alias} from ['"]([^'"]+)['"]`));
  if (!m) throw new Error(`${file}: no import of ${alias}`);
  return path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts'));
}

/** The body of `export class <name> extends APIResource`, up to the closing brace at column 0. */
function classBody(file: string, name: string): string {
  const text = read(file);
  const start = text.indexOf(`export class ${name} extends APIResource {`);
  if (start < 0) throw new Error(`${file}: no class ${name}`);
  const end = text.indexOf('\n}\n', start);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The SDK's `lib/` helpers that send requests themselves: function name → its requests. */
function libHelpers(): Map<string, { method: string; path: string }[]> {
  const helpers = new Map<string, { method: string; path: string }[]>();
  const dir = path.join(SRC, 'lib');
  for (const name of fs.readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const text = read(path.join(dir, name));
    const fns = [...text.matchAll(/^export (?:async )?function (\w+)/gm)];
    for (const call of text.matchAll(CALL)) {
      const fn = fns.filter((f) => f.index! < call.index!).at(-1);
      if (!fn) continue;
      const list = helpers.get(fn[1]!) ?? [];
      list.push({ method: verb(call[1]!), path: normal(call[3]!) });
      helpers.set(fn[1]!, list);
    }
  }
  return helpers;
}

function walkClass(file: string, name: string, prefix: string, helpers: Map<string, { method: string; path: string }[]>, out: SdkCall[]) {
  const body = classBody(file, name);
  for (const sub of body.matchAll(/^ {2}(\w+): (\w+)\.(\w+) = new \2\.\3\(this\._client\);/gm)) {
    walkClass(imported(file, sub[2]!), sub[3]!, `${prefix}.${sub[1]}`, helpers, out);
  }
  const methods = [...body.matchAll(METHOD)].filter((m) => m[1] !== 'constructor');
  const methodAt = (index: number) => methods.filter((m) => m.index! < index).at(-1)?.[1];
  for (const call of body.matchAll(CALL)) {
    const m = methodAt(call.index!);
    if (m) out.push({ method: verb(call[1]!), path: normal(call[3]!), sdk: `${prefix}.${m}` });
  }
  for (const [fn, calls] of helpers) {
    for (const use of body.matchAll(new RegExp(`\\b${fn}\\s*[<(]`, 'g'))) {
      const m = methodAt(use.index!);
      if (m) for (const c of calls) out.push({ ...c, sdk: `${prefix}.${m}` });
    }
  }
}

/** Every request each SDK method sends, in the SDK's order. */
export function sdkCalls(): SdkCall[] {
  const exportsOf = new Map<string, string>();
  const index = path.join(SRC, 'resources/index.ts');
  for (const m of read(index).matchAll(/export \{([^}]*)\} from ['"]([^'"]+)['"]/g)) {
    for (const name of m[1]!.split(',').map((s) => s.trim())) {
      if (/^\w+$/.test(name)) exportsOf.set(name, path.resolve(path.dirname(index), m[2]!.replace(/\.js$/, '.ts')));
    }
  }
  const helpers = libHelpers();
  const out: SdkCall[] = [];
  for (const m of read(path.join(SRC, 'index.ts')).matchAll(/^ {2}(\w+): API\.(\w+) = new API\.\2\(this\);/gm)) {
    const file = exportsOf.get(m[2]!);
    if (!file) throw new Error(`the SDK's client names ${m[2]}, which resources/index.ts does not export`);
    walkClass(file, m[2]!, m[1]!, helpers, out);
  }
  return out;
}
