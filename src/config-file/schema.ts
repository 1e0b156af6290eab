/**
 * The one table of every setting: the config file's keys, `config show`'s rows and the README's reference
 * are all made from it. Values are still parsed where they always were (src/config.ts and each module's
 * config.ts, from the environment): the table says where a setting lives, what YAML type its value has, and
 * what it means, so a file turns into the same variables an operator could have set.
 */

/**
 * The YAML types a value may have, by setting:
 * - integer, number, boolean, string: that scalar;
 * - list: a string of comma-separated items, or a sequence of strings (joined with commas);
 * - size: an integer of bytes, or a string (`512M`, `2G`, `10%`);
 * - port or word: an integer, or a string (`api`, `off`);
 * - an array: a string, one of those words (the parser checks which).
 */
export type SettingType = 'integer' | 'number' | 'boolean' | 'string' | 'list' | 'size' | 'port or word' | readonly string[];

export interface Setting {
  /** The variable (`DEVBOXD_PORT`); its key in the file is the rest of it, lowercased (`port`). */
  name: string;
  type: SettingType;
  /** What applies when neither the file nor the environment sets it (Markdown, as the README shows it). */
  default: string;
  /** One paragraph (Markdown), as the README shows it. */
  meaning: string;
  /**
   * `true`: the value is a secret, never printed; `url`: a URL whose password is masked (any value with
   * credentials in a URL is masked the same way).
   */
  secret?: true | 'url';
}

export interface Section {
  /** The file's top-level key (`server`). */
  name: string;
  /** What the section holds (one line for the README). */
  about: string;
  settings: readonly Setting[];
}

/** Builds a section's rows from `[variable, type, default, meaning, secret?]` tuples (the table stays dense). */
export function section(name: string, about: string, rows: readonly (readonly [string, SettingType, string, string, (true | 'url')?])[]): Section {
  return {
    name,
    about,
    settings: rows.map(([variable, type, def, meaning, secret]) => ({ name: variable, type, default: def, meaning, ...(secret ? { secret } : {}) })),
  };
}

/** The key of a variable in its section: `DEVBOXD_SSH_PORT` → `ssh_port`. */
export function keyOf(variable: string): string {
  return variable.replace(/^DEVBOXD_/, '').toLowerCase();
}

/** The type as the README and the errors name it. */
export function typeName(type: SettingType): string {
  return typeof type === 'string' ? type : type.join(' | ');
}
