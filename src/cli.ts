import { loadConfig } from './config.js';
import { AccountService } from './domain/accounts/account-service.js';
import { openDatabase } from './store/sqlite/db.js';
import { SqliteAccountStore } from './store/sqlite/account-store.js';
import { startServer } from './main.js';

const USAGE = `usage:
  devboxd serve                         start the server (env: DEVBOXD_HOST, DEVBOXD_PORT, DEVBOXD_DATA_DIR, ...)
  devboxd accounts create NAME          create an account; prints its first standard key last
  devboxd keys create ACCOUNT_NAME      create a further standard key for an account; prints it last
  devboxd keys list ACCOUNT_NAME        the account's keys that are not revoked (never their secrets)
  devboxd keys revoke KEY_ID            revoke a key at once: the next request with it gets 401`;

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
  if (cmd === 'keys' && (sub === 'list' || sub === 'revoke') && arg) {
    const db = openDatabase(config.dataDir);
    try {
      return sub === 'list' ? listKeys(new SqliteAccountStore(db), arg) : revokeKey(new SqliteAccountStore(db), arg);
    } finally {
      db.close();
    }
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

/** One line per key: id, kind, last 4 characters, creation, expiry, scopes, name. */
function listKeys(store: SqliteAccountStore, accountName: string): number {
  const account = store.findAccountByName(accountName);
  if (!account) {
    process.stderr.write(`no account named ${accountName}\n`);
    return 1;
  }
  const service = new AccountService(store);
  const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
  process.stdout.write('ID\tKIND\tLAST4\tCREATED\tEXPIRES\tSCOPES\tNAME\n');
  let startingAfter: string | undefined;
  for (;;) {
    const page = service.listKeys(account.id, { limit: 500, startingAfter, includeTotalCount: false });
    for (const k of page.items) {
      const scopes = k.kind === 'standard' ? 'all' : k.scopes.map((s) => `${s.resourceType.replace('RESOURCE_TYPE_', '')}:${s.accessLevel}`).join(',') || 'none';
      const cells = [k.id, k.kind, k.secretLast4 ?? '-', iso(k.createTimeMs), iso(k.expiresAtMs), scopes, k.name ?? ''];
      process.stdout.write(`${cells.join('\t')}\n`);
    }
    if (!page.hasMore || !page.items.length) return 0;
    startingAfter = page.items.at(-1)!.id;
  }
}

function revokeKey(store: SqliteAccountStore, keyId: string): number {
  const service = new AccountService(store);
  const before = store.getKey(keyId);
  const key = service.revokeKey(null, keyId);
  const account = store.getAccount(key.accountId);
  const already = before?.revokedAtMs != null ? ' (it was already revoked)' : '';
  process.stdout.write(`revoked key ${key.id} of ${account?.name ?? key.accountId}${already}\n`);
  return 0;
}
