/**
 * Just enough PromQL reading to check a dashboard or a rules file against what a server's /metrics exports:
 * the series names an expression selects and the label matchers of each selector. Not a parser: it relies on
 * the expressions being valid PromQL (promtool or Prometheus says so), and finds names by elimination.
 */

/** Words that are PromQL's own, never series names. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

export interface Matcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

export interface Selector {
  name: string;
  matchers: Matcher[];
}

/** Every series selector of `expr` (`name{matchers}` or a bare `name`), in order. */
export function selectors(expr: string): Selector[] {
  // Strings first (a matcher's value may hold `{`, `(` or a name-like word), then what is not a name.
  const strings: string[] = [];
  let s = expr.replace(/"(?:[^"\\]|\\.)*"/g, (m) => `"${strings.push(m) - 1}"`);
  const found: Selector[] = [];
  const braces: string[] = [];
  s = s.replace(/\{([^}]*)\}/g, (_m, inner: string) => `{${braces.push(inner) - 1}}`);
  s = s.replace(/\[[^\]]*\]/g, ' ').replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  for (const m of s.matchAll(/(?<![\w:.$"])([A-Za-z_:][\w:]*)\s*(\{(\d+)\})?/g)) {
    const [whole, name, , brace] = m;
    const after = s.slice(m.index + whole.length);
    if (!brace && /^\s*\(/.test(after)) continue; // a function
    if (KEYWORDS.has(name!.toLowerCase())) continue;
    found.push({ name: name!, matchers: brace === undefined ? [] : matchersOf(braces[Number(brace)]!, strings) });
  }
  return found;
}

function matchersOf(inner: string, strings: string[]): Matcher[] {
  const out: Matcher[] = [];
  for (const m of inner.matchAll(/([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"(\d+)"/g)) {
    out.push({ label: m[1]!, op: m[2] as Matcher['op'], value: JSON.parse(strings[Number(m[3])]!) as string });
  }
  return out;
}

/** Series names and the labels seen on each, from a Prometheus text exposition (histograms: `_bucket`, `_sum`, `_count`). */
export function exposition(text: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  const add = (name: string) => series.get(name) ?? series.set(name, new Set()).get(name)!;
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, name, kind] = type;
      const names = kind === 'histogram' ? ['_bucket', '_sum', '_count'] : kind === 'summary' ? ['', '_sum', '_count'] : [''];
      for (const suffix of names) add(`${name}${suffix}`);
      continue;
    }
    const sample = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample) continue;
    const labels = add(sample[1]!);
    for (const l of (sample[2] ?? '').matchAll(/([A-Za-z_]\w*)="/g)) labels.add(l[1]!);
  }
  return series;
}
