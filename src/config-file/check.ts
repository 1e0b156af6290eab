import { loadConfig } from '../config.js';
import { type Env, environmentWith, located } from './environment.js';
import type { ConfigFile } from './load.js';

/** A value a parser refused, with the variable its message names first among those set (if any). */
export interface ParserProblem {
  variable: string | undefined;
  message: string;
}

const VARIABLE = /DEVBOXD_[A-Z0-9_]*[A-Z0-9]/g;

/**
 * Runs the real parsers on `env`: the host-wide settings (src/config.ts) and every module's own, each on its
 * own so one module's bad value does not hide another's. The ranges and formats checked are the parsers',
 * exactly as at start: a parser stops at its first bad value, so each refused variable is dropped and the
 * parser run again, until it passes or refuses something no variable set explains (a required one missing).
 */
export async function parserProblems(env: Env): Promise<ParserProblem[]> {
  const { MODULES } = await import('../resources/index.js');
  const parsers: ((env: Env) => unknown)[] = [(e) => loadConfig(e), ...MODULES.flatMap((m) => (m.config ? [m.config] : []))];
  const seen = new Set<string>();
  const problems: ParserProblem[] = [];
  for (const parse of parsers) {
    for (const p of collect(parse, env)) {
      if (seen.has(p.message)) continue;
      seen.add(p.message);
      problems.push(p);
    }
  }
  return problems;
}

function collect(parse: (env: Env) => unknown, env: Env): ParserProblem[] {
  const current: Record<string, string | undefined> = { ...env };
  const problems: ParserProblem[] = [];
  // Each round drops one variable that was set, so the rounds are bounded by the variables.
  for (;;) {
    try {
      parse(current);
      return problems;
    } catch (err) {
      const message = (err as Error).message;
      const variable = [...message.matchAll(VARIABLE)].map((m) => m[0]).find((n) => current[n] !== undefined);
      problems.push({ variable, message });
      if (variable === undefined) return problems;
      delete current[variable];
    }
  }
}

/**
 * What `config check` prints: the file's own problems and the values the parsers refuse in the environment
 * with the file under it, each at the file's line of the value (or `environment:` when a variable set it),
 * in line order. A file that is not YAML is its syntax errors alone.
 */
export async function checkLines(env: Env, file: ConfigFile | undefined): Promise<string[]> {
  const found: { line: number; text: string }[] = (file?.problems ?? []).map((p) => ({ line: p.line, text: located(file!.path, p) }));
  if (!file || file.parsed) {
    for (const p of await parserProblems(environmentWith(env, file))) {
      const fromEnv = p.variable !== undefined && env[p.variable] !== undefined;
      const entry = p.variable && !fromEnv ? file?.entries.get(p.variable) : undefined;
      if (entry) {
        const { section, key } = entry.setting;
        found.push({ line: entry.line, text: located(file!.path, { line: entry.line, message: `${section}.${key}: ${p.message}` }) });
      } else found.push({ line: Number.POSITIVE_INFINITY, text: `${fromEnv || !file ? 'environment' : file.path}: ${p.message}` });
    }
  }
  return found.sort((a, b) => a.line - b.line).map((f) => f.text);
}
