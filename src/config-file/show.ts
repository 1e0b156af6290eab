import type { Env } from './environment.js';
import type { ConfigFile } from './load.js';
import { type PlacedSetting, SETTINGS } from './settings.js';

/** One row of `config show`. */
export interface ShownSetting {
  variable: string;
  /** `section.key` in the file. */
  key: string;
  /** The value in effect, masked where secret; null when the default applies. */
  value: string | null;
  /** The default as the reference states it (without its Markdown). */
  default: string;
  source: 'default' | 'file' | 'env';
  /** The file's line, for source `file`. */
  line?: number;
}

const MASK = '********';

/**
 * A value as it may be printed: a secret setting's as a mask, and in any other the password of a URL
 * (`postgres://devboxd:****@db/devboxd`). Empty stays empty, so an unset-by-empty secret shows as such.
 */
export function masked(setting: Pick<PlacedSetting, 'secret'>, value: string): string {
  if (value === '') return value;
  if (setting.secret === true) return MASK;
  return value.replace(/([a-z][a-z0-9+.-]*:\/\/[^/@\s:]*):[^/@\s]*@/gi, '$1:****@');
}

/**
 * Every setting with the value in effect and where it came from: the environment (`env`, the process's own
 * variables, without the file's), else the file, else the default. The same precedence the server applies.
 */
export function effective(env: Env, file: ConfigFile | undefined): ShownSetting[] {
  return SETTINGS.map((s) => {
    const base = { variable: s.name, key: `${s.section}.${s.key}` };
    const def = s.default.replace(/`/g, '');
    const fromEnv = env[s.name];
    if (fromEnv !== undefined) return { ...base, value: masked(s, fromEnv), default: def, source: 'env' as const };
    const entry = file?.entries.get(s.name);
    if (entry) return { ...base, value: masked(s, entry.value), default: def, source: 'file' as const, line: entry.line };
    return { ...base, value: null, default: def, source: 'default' as const };
  });
}

/** Tab-separated lines under a header, as the other listing commands print. */
export function showText(rows: readonly ShownSetting[]): string {
  const lines = rows.map((r) => [r.variable, r.key, r.value ?? r.default, r.source === 'file' ? `file:${r.line}` : r.source].join('\t'));
  return `VARIABLE\tKEY\tVALUE\tSOURCE\n${lines.join('\n')}\n`;
}
