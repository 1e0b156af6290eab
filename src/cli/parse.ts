import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Store } from '../platform/store/types.js';

/** A command of the operator CLI: its words, its positional arguments, its options, and what it does. */
export interface Command {
  /** The words that name it (`['keys', 'create']`). */
  words: string[];
  /**
   * Positional arguments by name (`['ACCOUNT_NAME']`); a last one in brackets (`'[NODE]'`) may be left out, and
   * a last one ending in `...` (`'COMMAND...'`, `'[COMMAND...]'`) takes every word left, after `--` too, joined
   * by spaces.
   */
  args: string[];
  /** Options as `node:util` parseArgs takes them, each with the line `--help` shows. */
  options?: Record<string, NonNullable<ParseArgsConfig['options']>[string] & { help: string; placeholder?: string }>;
  /** One line (more lines indented) for the usage text. */
  summary: string;
  run(args: Record<string, string>, options: Record<string, string | boolean | undefined>): Promise<number>;
}

/** Runs `fn` on the opened store and closes it; the exit code is fn's. */
export type WithStore = (fn: (store: Store) => Promise<number>) => Promise<number>;

/** Where a command writes: the process's stdout and stderr, or a test's buffers. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export { UsageError } from '../platform/module/index.js';
import { UsageError } from '../platform/module/index.js';

const flag = (name: string, o: NonNullable<Command['options']>[string]) => (o.type === 'string' ? `--${name} ${o.placeholder ?? 'VALUE'}` : `--${name}`);
const synopsis = (c: Command) => ['devboxd', ...c.words, ...c.args, ...Object.entries(c.options ?? {}).map(([n, o]) => `[${flag(n, o)}]`)].join(' ');

/** Every command's synopsis and summary: what `devboxd --help` prints. */
export function usage(commands: Command[]): string {
  const lines = ['usage:'];
  for (const c of commands) {
    lines.push(`  ${synopsis(c)}`, ...c.summary.split('\n').map((l) => `      ${l}`));
  }
  lines.push(
    '',
    'devboxd COMMAND --help shows one command. devboxd --config FILE COMMAND (or COMMAND --config FILE) reads the',
    'settings from a YAML file, under the variables that are set (README, "Configuration"); the client commands take none.',
  );
  return lines.join('\n');
}

/** One command's synopsis, summary and options: what `devboxd COMMAND --help` prints. */
export function commandHelp(c: Command): string {
  const opts = Object.entries(c.options ?? {}).map(([n, o]) => `  ${flag(n, o)}  ${o.help}`);
  return [`usage: ${synopsis(c)}`, '', c.summary, ...(opts.length ? ['', 'options:', ...opts] : [])].join('\n');
}

/**
 * Finds the command `argv` names (its longest matching words) and parses the rest against it. `help` is
 * true for `--help`/`-h` anywhere after the words. Throws UsageError naming what is wrong.
 */
export function resolve(
  commands: Command[],
  argv: string[],
): { command: Command; help: boolean; args: Record<string, string>; options: Record<string, string | boolean | undefined> } {
  const command = [...commands].sort((a, b) => b.words.length - a.words.length).find((c) => c.words.every((w, i) => argv[i] === w));
  if (!command) {
    const words = argv
      .filter((a) => !a.startsWith('-'))
      .slice(0, 2)
      .join(' ');
    throw new UsageError(
      `devboxd: no command ${words ? `"${words}"` : 'given'}`,
      'usage: devboxd COMMAND [ARGUMENTS] [OPTIONS] (devboxd --help lists the commands)',
    );
  }
  const rest = argv.slice(command.words.length);
  const options = Object.fromEntries(Object.entries(command.options ?? {}).map(([n, { help: _help, placeholder: _p, ...o }]) => [n, o]));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`devboxd: ${(err as Error).message}`, `usage: ${synopsis(command)}`);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) return { command, help: true, args: {}, options: {} };
  const required = command.args.filter((a) => !a.startsWith('[')).length;
  const last = command.args.at(-1)?.replace(/^\[(.*)\]$/, '$1');
  const variadic = last?.endsWith('...') ? last.slice(0, -3) : undefined;
  if (variadic !== undefined && parsed.positionals.length >= required) {
    const fixed = command.args.slice(0, -1);
    const args = Object.fromEntries(fixed.map((name, i) => [name, parsed.positionals[i]!]));
    return { command, help: false, args: { ...args, [variadic]: parsed.positionals.slice(fixed.length).join(' ') }, options: values };
  }
  if (parsed.positionals.length < required || parsed.positionals.length > command.args.length) {
    const want = command.args.length ? command.args.join(' ') : 'no arguments';
    throw new UsageError(`devboxd ${command.words.join(' ')}: takes ${want}`, `usage: ${synopsis(command)}`);
  }
  const given = command.args.slice(0, parsed.positionals.length);
  const args = Object.fromEntries(given.map((name, i) => [name.replace(/^\[(.*)\]$/, '$1'), parsed.positionals[i]!]));
  return { command, help: false, args, options: values };
}
