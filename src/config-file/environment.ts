import { ConfigError } from '../platform/config-error.js';
import { type ConfigFile, type Problem, readConfigFile } from './load.js';
import { configPath } from './option.js';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * The environment the settings are parsed from: the file's values under the process's variables (a variable
 * that is set, even to the empty string, wins over the file). DEVBOXD_CONFIG is left out: the processes
 * devboxd starts (the `all` roles) get the values themselves, not a file their user may not be able to read.
 */
export function environmentWith(env: Env, file: ConfigFile | undefined): Record<string, string | undefined> {
  const merged: Record<string, string | undefined> = {};
  for (const [name, entry] of file?.entries ?? []) merged[name] = entry.value;
  for (const [name, value] of Object.entries(env)) if (value !== undefined) merged[name] = value;
  delete merged.DEVBOXD_CONFIG;
  return merged;
}

/** `FILE:LINE: message` (the file alone when the problem has no line). */
export function located(file: string, p: Problem): string {
  return `${file}${p.line ? `:${p.line}` : ''}: ${p.message}`;
}

/**
 * What a command runs with: the environment with the config file (if one is named) merged in. A file with
 * problems stops the command with all of them listed; its warnings go to `warn`.
 */
export function settingsEnvironment(env: Env, option: string | undefined, warn: (line: string) => void): { env: Env; file?: ConfigFile } {
  const path = configPath(option, env);
  if (path === undefined) return { env: environmentWith(env, undefined) };
  const file = readConfigFile(path);
  if (file.problems.length) {
    throw new ConfigError(`config file ${path} is not valid (devboxd config check ${path}):\n${file.problems.map((p) => `  ${located(path, p)}`).join('\n')}`);
  }
  for (const w of file.warnings) warn(w);
  return { env: environmentWith(env, file), file };
}
