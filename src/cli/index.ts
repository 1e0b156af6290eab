import { loadConfig, type Config } from '../config.js';
import { CONFIG_OPTION, configPath } from '../config-file/option.js';
import type { CommandContext } from '../host.js';
import { apiSide, handBack } from '../roles/operator.js';
import { benchmarkCommands } from './client/benchmark-commands.js';
import { blueprintCommands } from './client/blueprint-commands.js';
import { dataCommands } from './client/data-commands.js';
import { devboxCommands } from './client/devbox-commands.js';
import { completionCommand } from './completion.js';
import { type Command, commandHelp, type Io, resolve, UsageError, usage, type WithStore } from './parse.js';

/** The first words of the client commands, which load no resource module. */
const CLIENT_WORDS = ['devbox', 'snapshot', 'object', 'blueprint', 'benchmark'];

const PROCESS_IO: Io = { out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s) };

/**
 * The commands: for `first` words that need no module (`serve`, `config`, and the client commands, which talk
 * to a server over its API) the resource modules are not loaded, so a role or a client command loads only
 * what it runs (`config check` loads them itself, for their settings' parsers).
 */
async function commands(config: () => Config, io: Io, first: string, files: ConfigFiles): Promise<Command[]> {
  // The operator's commands act on the API server's data (under DEVBOXD_ROLE=all, `<data>/api`).
  let operator: Config | undefined;
  const operatorConfig = () => (operator ??= apiSide(config()));
  const withStore: WithStore = async (fn) => {
    const c = operatorConfig();
    const { openStore } = await import('../resources/core-store.js');
    const { MODULE_SCHEMAS } = await import('../resources/index.js');
    const store = await openStore({ dataDir: c.dataDir, databaseUrl: c.databaseUrl, modules: MODULE_SCHEMAS });
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };
  const serve: Command = {
    words: ['serve'],
    args: [],
    summary: 'start the server (env: DEVBOXD_HOST, DEVBOXD_PORT, DEVBOXD_DATA_DIR, ...; see the README)',
    run: async () => {
      const c = config();
      const stopOn = (stop: () => Promise<unknown> | void) => {
        const onSignal = () =>
          Promise.resolve(stop()).then(
            () => process.exit(0),
            () => process.exit(1),
          );
        process.once('SIGTERM', onSignal);
        process.once('SIGINT', onSignal);
      };
      if (c.roles.role === 'all') {
        const { startAll } = await import('../roles/all.js');
        const both = startAll(c);
        // Ctrl-C reaches the whole process group; the supervisor still orders the stop (API server first).
        stopOn(() => both.stop());
        void both.exited.then((code) => process.exit(code));
        return -1;
      }
      if (c.roles.role === 'node') {
        const { startNodeAgent } = await import('../roles/node-agent.js');
        stopOn((await startNodeAgent(c)).stop);
        return -1;
      }
      // The server and every route load only for `serve`: the other commands start in a fraction of the time.
      const { startServer } = await import('../main.js');
      stopOn((await startServer(c)).stop);
      return -1;
    },
  };
  const client = [...devboxCommands(io), ...dataCommands(io), ...blueprintCommands(io), ...benchmarkCommands(io)];
  const configs = async () => (await import('../config-file/index.js')).configCommands(io, files.env, () => files.option);
  if (first === 'config') return [...[serve, ...(await configs())].map(withConfig), ...client];
  if (['serve', ...CLIENT_WORDS].includes(first)) return [withConfig(serve), ...client];
  const { MODULES, SEALED } = await import('../resources/index.js');
  // The settings load when a command runs, not for `--help`: a bad environment does not hide the usage.
  const ctx: CommandContext = {
    get config() {
      return operatorConfig();
    },
    io,
    withStore,
    sealed: SEALED,
  };
  // Backup and restore take the server's own settings: under DEVBOXD_ROLE=all the whole data dir, not `<data>/api`.
  const { backupCommands } = await import('../ops/backup/index.js');
  const fromModules = [...MODULES.flatMap((m) => m.commands ?? []), ...backupCommands(config)].map(
    (c): Command => ({
      ...c,
      run: async (args, options) => {
        try {
          return await c.run(ctx, args, options);
        } finally {
          if (operator) handBack(operator);
        }
      },
    }),
  );
  const all: Command[] = [...[serve, ...fromModules, ...(await configs())].map(withConfig), ...client];
  all.push(completionCommand(io, () => all));
  return all;
}

/** The environment a command runs in and the `--config` it was given (read when its settings load). */
interface ConfigFiles {
  env: NodeJS.ProcessEnv;
  option: string | undefined;
}

/** Every command but the client ones (which read no server settings) takes `--config FILE`. */
const withConfig = (c: Command): Command => ({ ...c, options: { ...c.options, config: CONFIG_OPTION } });

/** `--config FILE` or `--config=FILE` ahead of the command's words: the file, and the words after it. */
function leadingConfig(argv: string[]): { option: string | undefined; rest: string[] } {
  if (argv[0] === '--config' && argv.length > 1) return { option: argv[1], rest: argv.slice(2) };
  if (argv[0]?.startsWith('--config=')) return { option: argv[0].slice('--config='.length), rest: argv.slice(1) };
  return { option: undefined, rest: argv };
}

/**
 * The operator CLI on `node:util`'s parseArgs: `devboxd --help` and `devboxd COMMAND --help` print usage (exit
 * 0); an unknown command, a wrong argument count or an unknown option exits 2 with the usage line. No command
 * is `serve`; the others are the resource modules' (each module's `commands`, in the order of the list), then the
 * client commands (`devbox ...`, over the API with the SDK). Commands that
 * touch the database open the one the server uses (DEVBOXD_DATABASE_URL, else SQLite in DEVBOXD_DATA_DIR).
 * Answers the exit code, or -1 while the server runs.
 */
export async function runCli(argv: string[], io: Io = PROCESS_IO, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let loaded: Config | undefined;
  const lead = leadingConfig(argv);
  argv = lead.rest.length === 0 ? ['serve'] : lead.rest;
  const files: ConfigFiles = { env, option: lead.option };
  // The file is read as the settings load (when the command runs), under the environment's variables; its
  // reader (and the YAML library) loads only when there is a file.
  let reader: typeof import('../config-file/index.js') | undefined;
  const settings = () => {
    if (!reader) return loadConfig({ ...env });
    return loadConfig(reader.settingsEnvironment(env, files.option, (w) => io.err(`devboxd: warning: ${w}\n`)).env);
  };
  // The supervisor and the node agent are `serve` too: neither loads the resource modules (nor their
  // libraries), which took most of a second of each one's start.
  const table = await commands(() => (loaded ??= settings()), io, argv[0]!, files);
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    io.out(`${usage(table)}\n`);
    return 0;
  }
  try {
    const { command, help, args, options } = resolve(table, argv);
    if (help) {
      io.out(`${commandHelp(command)}\n`);
      return 0;
    }
    if (!command.options?.config && lead.option !== undefined) {
      throw new UsageError(`devboxd ${command.words.join(' ')}: takes no --config (it reads no server settings)`, commandHelp(command).split('\n')[0]!);
    }
    if (typeof options.config === 'string') files.option = options.config;
    if (command.options?.config && configPath(files.option, env) !== undefined) reader = await import('../config-file/index.js');
    return await command.run(args, options);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`${err.message}\n${err.usage}\n`);
    return 2;
  }
}
