import type { Command, Io } from '../cli/parse.js';
import { ConfigError } from '../platform/config-error.js';
import { checkLines } from './check.js';
import { type Env, located } from './environment.js';
import { type ConfigFile, readConfigFile } from './load.js';
import { configPath } from './option.js';
import { effective, showText } from './show.js';

/**
 * `devboxd config check [FILE]` and `devboxd config show [--json]`. `env` is the process's own environment
 * (without the file's values, so each value's source can be told); `option` is the `--config` given.
 */
export function configCommands(io: Io, env: Env, option: () => string | undefined): Command[] {
  const read = (file: string): ConfigFile | number => {
    try {
      return readConfigFile(file);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      io.err(`${err.message}\n`);
      return 1;
    }
  };
  const check: Command = {
    words: ['config', 'check'],
    args: ['[FILE]'],
    summary: `validate a config file (default --config, else DEVBOXD_CONFIG) with the environment over it, as serve
would read them: unknown sections and keys, wrong types, values the settings' parsers refuse (out of
range, malformed), each with its line; exits 0 when serve would accept them, else 1`,
    run: async ({ FILE }) => {
      const path = FILE ?? configPath(option(), env);
      const file = path === undefined ? undefined : read(path);
      if (typeof file === 'number') return file;
      for (const w of file?.warnings ?? []) io.err(`warning: ${w}\n`);
      const lines = await checkLines(env, file);
      const what = file ? file.path : 'the environment (no config file: --config, DEVBOXD_CONFIG)';
      if (lines.length) {
        io.out(`${lines.join('\n')}\n`);
        io.err(`${what}: ${lines.length} problem${lines.length === 1 ? '' : 's'}\n`);
        return 1;
      }
      const overridden = file ? [...file.entries.keys()].filter((n) => env[n] !== undefined) : [];
      const count = file ? `${file.entries.size} setting${file.entries.size === 1 ? '' : 's'}` : '';
      io.out(`${what}: ok${file ? `, ${count}` : ''}${overridden.length ? ` (the environment overrides ${overridden.join(', ')})` : ''}\n`);
      return 0;
    },
  };
  const show: Command = {
    words: ['config', 'show'],
    args: [],
    options: { json: { type: 'boolean', help: 'print JSON: [{variable, key, value, default, source, line}], value null where the default applies' } },
    summary: `the effective configuration: every setting, its value (secrets masked) and where it came from:
env (a variable), file:LINE (the config file of --config or DEVBOXD_CONFIG), or default`,
    run: async (_args, o) => {
      const path = configPath(option(), env);
      const file = path === undefined ? undefined : read(path);
      if (typeof file === 'number') return file;
      for (const w of file?.warnings ?? []) io.err(`warning: ${w}\n`);
      if (file?.problems.length) {
        io.err(`${file.problems.map((p) => located(file.path, p)).join('\n')}\nconfig file ${file.path} is not valid (devboxd config check)\n`);
        return 1;
      }
      const rows = effective(env, file);
      io.out(o.json ? `${JSON.stringify(rows, null, 2)}\n` : showText(rows));
      return 0;
    },
  };
  return [check, show];
}
