/**
 * A small Dockerfile reader: instructions with their line numbers, the `escape` parser directive, comments,
 * line continuations and the JSON (exec) form; and the builder's variable expansion ($V, ${V}, ${V:-w},
 * ${V:+w}). Semantics (what each instruction does) live in build-steps.ts. Written here rather than taken
 * from npm: what a build needs is this much, with Docker's expansion rules, which the parsers there leave out.
 */

export interface Instruction {
  /** Upper-cased keyword, e.g. `RUN`. */
  keyword: string;
  /** Everything after the keyword, continuations joined, trimmed. */
  args: string;
  /** The exec form, when `args` is a JSON array of strings. */
  json: string[] | null;
  /** 1-based line of the keyword. */
  line: number;
}

export class DockerfileError extends Error {}

export function parseDockerfile(text: string): Instruction[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let escape = '\\';
  let i = 0;
  // Parser directives: `# key=value` lines at the very top.
  for (; i < lines.length; i++) {
    const m = /^\s*#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$/.exec(lines[i]!);
    if (!m) break;
    if (m[1]!.toLowerCase() === 'escape') {
      if (m[2] !== '\\' && m[2] !== '`') throw new DockerfileError(`line ${i + 1}: escape must be \\ or \``);
      escape = m[2]!;
    }
  }
  const out: Instruction[] = [];
  while (i < lines.length) {
    const raw = lines[i]!;
    const start = i;
    i++;
    if (/^\s*(#|$)/.test(raw)) continue;
    let text = raw;
    // A line ending in the escape character continues on the next; comment and empty lines inside are skipped.
    while (endsWithEscape(text, escape) && i < lines.length) {
      text = text.replace(/\s*$/, '').slice(0, -1);
      while (i < lines.length && /^\s*#/.test(lines[i]!)) i++;
      if (i < lines.length) text += lines[i++]!;
    }
    if (endsWithEscape(text, escape)) text = text.replace(/\s*$/, '').slice(0, -1);
    const m = /^\s*(\S+)\s*([\s\S]*)$/.exec(text)!;
    const args = m[2]!.trim();
    if (/^<<-?["']?[A-Za-z_]/.test(args.replace(/^(--\S+\s+)*/, ''))) {
      throw new DockerfileError(`line ${start + 1}: heredocs (<<EOF) are not supported`);
    }
    out.push({ keyword: m[1]!.toUpperCase(), args, json: jsonForm(args), line: start + 1 });
  }
  return out;
}

function endsWithEscape(s: string, escape: string): boolean {
  return s.replace(/\s*$/, '').endsWith(escape);
}

function jsonForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  try {
    const v: unknown = JSON.parse(args);
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : null;
  } catch {
    return null;
  }
}

/**
 * Splits like a shell without expansion: whitespace separates words, quotes group them, the escape character
 * keeps the next one as is (inside double quotes only before `"`, `$` and itself).
 */
export function splitWords(s: string, escape = '\\'): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === escape && quote === '"' && i + 1 < s.length && ['"', '$', escape].includes(s[i + 1]!)) cur += s[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === escape && i + 1 < s.length) {
      cur += s[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote) throw new DockerfileError(`unterminated ${quote} quote in: ${s}`);
  if (inWord) words.push(cur);
  return words;
}

/**
 * `key=value` pairs (ENV, LABEL, ARG), or the legacy `ENV key value with spaces` form. Values are expanded
 * with `vars` (earlier pairs of the same instruction do not see each other, as in Docker).
 */
export function parsePairs(args: string, vars: Record<string, string>, keyword: string): [string, string][] {
  const words = splitWords(expand(args, vars, { keepQuotes: true }));
  if (words.length === 0) throw new DockerfileError(`${keyword} needs at least one argument`);
  if (!words[0]!.includes('=')) {
    if (keyword === 'ARG') return [[words[0]!, '']];
    if (words.length < 2) throw new DockerfileError(`${keyword} ${words[0]} has no value`);
    const [, rest] = /^\s*\S+\s+([\s\S]*)$/.exec(expand(args, vars))!;
    return [[words[0]!, rest!.trim()]];
  }
  return words.map((w) => {
    const eq = w.indexOf('=');
    if (eq <= 0) throw new DockerfileError(`${keyword}: "${w}" is not key=value`);
    return [w.slice(0, eq), w.slice(eq + 1)];
  });
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/**
 * Docker's builder expansion: `$NAME`, `${NAME}`, `${NAME:-word}` / `${NAME-word}` (default),
 * `${NAME:+word}` / `${NAME+word}` (alternative); `\$` is a literal `$`. With `keepQuotes`, quotes and
 * escapes stay for a later word split; otherwise an escaped `$` loses its escape.
 */
export function expand(s: string, vars: Record<string, string>, opts: { keepQuotes?: boolean; escape?: string } = {}): string {
  const escape = opts.escape ?? '\\';
  let out = '';
  let single = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "'" && opts.keepQuotes) single = !single;
    if (c === escape && s[i + 1] === '$') {
      out += opts.keepQuotes ? escape + '$' : '$';
      i++;
      continue;
    }
    if (c !== '$' || single) {
      out += c;
      continue;
    }
    const rest = s.slice(i + 1);
    if (rest.startsWith('{')) {
      const close = rest.indexOf('}');
      if (close < 0) throw new DockerfileError(`missing } in ${s}`);
      const body = rest.slice(1, close);
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])(.*))?$/s.exec(body);
      if (!m) throw new DockerfileError(`unsupported substitution \${${body}}`);
      const [, name, op, word] = m;
      const set = Object.hasOwn(vars, name!);
      const value = set ? vars[name!]! : '';
      const nonEmpty = op?.startsWith(':') ? value !== '' : set;
      if (!op) out += value;
      else if (op.endsWith('-')) out += nonEmpty ? value : expand(word ?? '', vars, opts);
      else out += nonEmpty ? expand(word ?? '', vars, opts) : '';
      i += close + 1;
      continue;
    }
    const m = NAME.exec(rest);
    if (!m) {
      out += c;
      continue;
    }
    out += vars[m[0]] ?? '';
    i += m[0].length;
  }
  return out;
}
