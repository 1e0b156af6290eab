import { loadConfig } from './config.js';
import { AccountService } from './domain/accounts/account-service.js';
import { openDatabase } from './store/sqlite/db.js';
import { SqliteAccountStore } from './store/sqlite/account-store.js';
import { startServer } from './main.js';

const USAGE = `usage:
  devboxd serve                         start the server (env: DEVBOXD_HOST, DEVBOXD_PORT, DEVBOXD_DATA_DIR, ...)
  devboxd accounts create NAME          create an account; prints its first standard key last
  devboxd keys create ACCOUNT_NAME      create a further standard key for an account; prints it last`;

/** The operator CLI; account commands open the same database the server uses (DEVBOXD_DATA_DIR). */
export async function runCli(argv: string[]): Promise<number> {
  const [cmd, sub, arg] = argv;
  const config = loadConfig();
  if (cmd === 'serve' || cmd === undefined) {
    const server = await startServer(config);
    const onSignal = () => {
      server.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    return -1;
  }
  if (cmd === 'accounts' && sub === 'create' && arg) {
    const db = openDatabase(config.dataDir);
    const { account, secret } = new AccountService(new SqliteAccountStore(db)).createAccount(arg);
    db.close();
    process.stdout.write(`created account ${account.name} (${account.id})\n${secret}\n`);
    return 0;
  }
  if (cmd === 'keys' && sub === 'create' && arg) {
    const db = openDatabase(config.dataDir);
    const store = new SqliteAccountStore(db);
    const account = store.findAccountByName(arg);
    if (!account) {
      process.stderr.write(`no account named ${arg}\n`);
      return 1;
    }
    const { secret } = new AccountService(store).createKey(account.id, { name: 'cli', kind: 'standard' });
    db.close();
    process.stdout.write(`created a standard key for ${account.name}\n${secret}\n`);
    return 0;
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}
