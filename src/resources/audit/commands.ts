import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import { UsageError } from '../../platform/module/index.js';
import type { Store } from '../../platform/store/types.js';
import { auditJson } from './audit-record.js';
import { type AuditFilter, type AuditRow, SqlAuditStore } from './sql-audit-store.js';

const USAGE =
  'usage: devboxd audit [--account NAME|ID] [--key KEY_ID] [--route TEXT] [--resource ID] [--since DURATION|TIME] [--until DURATION|TIME] [--status CODE|Nxx] [--limit N] [--json]';

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 100_000;

const usage = (message: string) => new UsageError(`devboxd audit: ${message}`, USAGE);

/** `30m`, `12h`, `7d` (that long before now), or a time `2026-05-01` / `2026-05-01T12:00:00Z`, to ms since the epoch. */
export function parseWhen(option: string, raw: string, nowMs = Date.now()): number {
  const ago = /^(\d{1,9})([smhd])$/.exec(raw);
  if (ago) return nowMs - Number(ago[1]) * UNITS[ago[2]!]!;
  const at = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(at)) throw usage(`--${option} takes a duration before now (30m, 12h, 7d) or a time (2026-05-01, 2026-05-01T12:00:00Z), got "${raw}"`);
  return at;
}

/** `404` (that status) or `4xx` (its class). */
export function parseStatus(raw: string): { min: number; max: number } {
  if (/^[1-5]\d\d$/.test(raw)) return { min: Number(raw), max: Number(raw) };
  if (/^[1-5]xx$/i.test(raw)) return { min: Number(raw[0]) * 100, max: Number(raw[0]) * 100 + 99 };
  throw usage(`--status takes a status (404) or a class (4xx), got "${raw}"`);
}

type Options = Record<string, string | boolean | undefined>;

/** The filter the options give, but for the account (a name is looked up in the database). */
function filterOf(o: Options, nowMs: number): AuditFilter {
  const s = (name: string) => o[name] as string | undefined;
  const limit = s('limit') ?? String(DEFAULT_LIMIT);
  if (!/^\d{1,6}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_LIMIT)
    throw usage(`--limit takes an integer from 1 to ${MAX_LIMIT}, got "${limit}"`);
  const f: AuditFilter = { limit: Number(limit) };
  if (s('key') !== undefined) f.keyId = s('key');
  if (s('route') !== undefined) f.route = s('route');
  if (s('resource') !== undefined) f.resourceId = s('resource');
  if (s('since') !== undefined) f.sinceMs = parseWhen('since', s('since')!, nowMs);
  if (s('until') !== undefined) f.untilMs = parseWhen('until', s('until')!, nowMs);
  if (s('status') !== undefined) f.status = parseStatus(s('status')!);
  return f;
}

async function accountIdOf(store: Store, nameOrId: string): Promise<string | undefined> {
  return (await store.accounts.findAccountByName(nameOrId))?.id ?? (await store.accounts.getAccount(nameOrId))?.id;
}

function line(r: AuditRow): string {
  const key = r.keyId ?? (r.keyLast4 ? `...${r.keyLast4}` : '-');
  // `dbx_1 -> snp_2`: the box a snapshot was taken of, and the snapshot; `-> dbx_3`: what a create made.
  const resource = r.answerId ? `${r.resourceId ? `${r.resourceId} ` : ''}-> ${r.answerId}` : (r.resourceId ?? '-');
  const cells = [new Date(r.timeMs).toISOString(), r.status, r.method, r.route, resource, r.accountName ?? r.accountId ?? '-', key, r.ip ?? '-', r.durationMs];
  return `${cells.join('\t')}\n`;
}

/** `devboxd audit`: the audit trail's table, read on the database the servers write it to. */
export const AUDIT_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['audit'],
    args: [],
    options: {
      account: { type: 'string', placeholder: 'NAME|ID', help: "the account's requests (refused keys have none)" },
      key: { type: 'string', placeholder: 'KEY_ID', help: "one key's requests" },
      route: { type: 'string', placeholder: 'TEXT', help: 'routes whose "METHOD /v1/pattern" holds TEXT, any case ("shutdown", "POST /v1/secrets")' },
      resource: { type: 'string', placeholder: 'ID', help: 'requests naming ID in their path or answer (a create names the new id)' },
      since: { type: 'string', placeholder: 'DURATION|TIME', help: 'from then on: 30m, 12h, 7d before now, or 2026-05-01T12:00:00Z' },
      until: { type: 'string', placeholder: 'DURATION|TIME', help: 'before then (as --since)' },
      status: { type: 'string', placeholder: 'CODE|Nxx', help: 'one status (404) or a class (4xx)' },
      limit: { type: 'string', placeholder: 'N', help: `at most N rows, the newest (default ${DEFAULT_LIMIT})` },
      json: { type: 'boolean', help: 'one JSON object per line, as DEVBOXD_AUDIT_LOG ships them (with account_name)' },
    },
    summary: `state-changing API requests as the audit trail recorded them, newest first: time, status, method,
route, resource (-> the id the answer named), account, key (...last 4 of a refused one), address, ms`,
    run: ({ io, withStore }, _args, o) => {
      const filter = filterOf(o, Date.now());
      return withStore(async (store) => {
        if (o.account !== undefined) {
          const id = await accountIdOf(store, o.account as string);
          if (!id) {
            io.err(`devboxd audit: no account named or with id ${o.account}\n`);
            return 1;
          }
          filter.accountId = id;
        }
        const rows = await new SqlAuditStore(store.db).list(filter);
        if (o.json) {
          io.out(rows.map((r) => `${JSON.stringify(auditJson(r, { account_name: r.accountName }))}\n`).join(''));
          return 0;
        }
        io.out(`TIME\tSTATUS\tMETHOD\tROUTE\tRESOURCE\tACCOUNT\tKEY\tIP\tMS\n${rows.map(line).join('')}`);
        return 0;
      });
    },
  },
];
