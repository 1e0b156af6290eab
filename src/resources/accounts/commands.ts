import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import type { Store } from '../../platform/store/types.js';
import { AccountService } from './account-service.js';

type Io = CommandContext['io'];

/** Accounts and their keys, through the account service the API uses. */
export const ACCOUNT_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['accounts', 'create'],
    args: ['NAME'],
    summary: 'create an account; prints its first standard key last',
    run: ({ io, withStore }, { NAME }) =>
      withStore(async (store) => {
        const { account, secret } = await new AccountService(store).createAccount(NAME!);
        io.out(`created account ${account.name} (${account.id})\n${secret}\n`);
        return 0;
      }),
  },
  {
    words: ['keys', 'create'],
    args: ['ACCOUNT_NAME'],
    summary: 'create a further standard key for an account; prints it last',
    run: ({ io, withStore }, { ACCOUNT_NAME }) =>
      withStore(async (store) => {
        const account = await store.accounts.findAccountByName(ACCOUNT_NAME!);
        if (!account) return fail(io, `no account named ${ACCOUNT_NAME}`);
        const { secret } = await new AccountService(store).createKey(account.id, { name: 'cli', kind: 'standard' });
        io.out(`created a standard key for ${account.name}\n${secret}\n`);
        return 0;
      }),
  },
  {
    words: ['keys', 'list'],
    args: ['ACCOUNT_NAME'],
    summary: "the account's keys that are not revoked (never their secrets)",
    run: ({ io, withStore }, { ACCOUNT_NAME }) => withStore((store) => listKeys(io, store, ACCOUNT_NAME!)),
  },
  {
    words: ['keys', 'revoke'],
    args: ['KEY_ID'],
    summary: 'revoke a key at once: the next request with it gets 401',
    run: ({ io, withStore }, { KEY_ID }) => withStore((store) => revokeKey(io, store, KEY_ID!)),
  },
];

function fail(io: Io, message: string): number {
  io.err(`${message}\n`);
  return 1;
}

/** One line per key: id, kind, last 4 characters, creation, expiry, scopes, name. */
async function listKeys(io: Io, store: Store, accountName: string): Promise<number> {
  const account = await store.accounts.findAccountByName(accountName);
  if (!account) return fail(io, `no account named ${accountName}`);
  const service = new AccountService(store);
  const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
  io.out('ID\tKIND\tLAST4\tCREATED\tEXPIRES\tSCOPES\tNAME\n');
  let startingAfter: string | undefined;
  for (;;) {
    const page = await service.listKeys(account.id, { limit: 500, startingAfter, includeTotalCount: false });
    for (const k of page.items) {
      const scopes =
        k.kind === 'standard' ? 'all' : k.scopes.map((s) => `${s.resourceType.replace('RESOURCE_TYPE_', '')}:${s.accessLevel}`).join(',') || 'none';
      const cells = [k.id, k.kind, k.secretLast4 ?? '-', iso(k.createTimeMs), iso(k.expiresAtMs), scopes, k.name ?? ''];
      io.out(`${cells.join('\t')}\n`);
    }
    if (!page.hasMore || !page.items.length) return 0;
    startingAfter = page.items.at(-1)!.id;
  }
}

async function revokeKey(io: Io, store: Store, keyId: string): Promise<number> {
  const service = new AccountService(store);
  const before = await store.accounts.getKey(keyId);
  const key = await service.revokeKey(null, keyId);
  const account = await store.accounts.getAccount(key.accountId);
  const already = before?.revokedAtMs != null ? ' (it was already revoked)' : '';
  io.out(`revoked key ${key.id} of ${account?.name ?? key.accountId}${already}\n`);
  return 0;
}
