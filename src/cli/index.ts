import { loadConfig, type Config } from '../config.js';
import { openStore } from '../resources/core-store.js';
import { keyCommands } from './keys.js';
import { operationCommands } from './operations.js';
import { type Command, commandHelp, type Io, resolve, UsageError, usage, type WithStore } from './parse.js';

const PROCESS_IO: Io = { out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s) };

function commands(config: () => Config, io: Io): Command[] {
  const withStore: WithStore = async (fn) => {
    const c = config();
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
      // The server and every route load only for `serve`: the other commands start in a fraction of the time.
      const { startServer } = await import('../main.js');
      const server = await startServer(config());
      const onSignal = () =>
        server.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      return -1;
    },
  };
  return [serve, ...keyCommands(io, withStore), ...operationCommands(config, io, withStore)];
}

/**
 * The operator CLI on `node:util`'s parseArgs: `devboxd --help` and `devboxd COMMAND --help` print usage (exit
 * 0); an unknown command, a wrong argument count or an unknown option exits 2 with the usage line. No command
 * is `serve`. Commands that touch accounts and keys open the database the server uses (DEVBOXD_DATABASE_URL,
 * else SQLite in DEVBOXD_DATA_DIR). Answers the exit code, or -1 while the server runs.
 */
export async function runCli(argv: string[], io: Io = PROCESS_IO): Promise<number> {
  let loaded: Config | undefined;
  const table = commands(() => (loaded ??= loadConfig()), io);
  if (argv.length === 0) argv = ['serve'];
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
    return await command.run(args, options);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`${err.message}\n${err.usage}\n`);
    return 2;
  }
}
