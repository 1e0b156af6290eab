import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { AuditRecord } from './audit-record.js';

/** What `devboxd audit` asks for; every field narrows, `limit` rows at most, newest first. */
export interface AuditFilter {
  accountId?: string;
  keyId?: string;
  /** A piece of `METHOD /route/:pattern`, any case. */
  route?: string;
  /** The id the path named or the answer gave. */
  resourceId?: string;
  sinceMs?: number;
  untilMs?: number;
  /** Statuses from `min` to `max`, both included (`404`, or `4xx`: 400 to 499). */
  status?: { min: number; max: number };
  limit: number;
}

/** A row as `devboxd audit` shows it: the record, its place in the table, and its account's name. */
export interface AuditRow extends AuditRecord {
  seq: number;
  accountName: string | null;
}

const COLUMNS = [
  'time_ms',
  'node',
  'account_id',
  'key_id',
  'key_last4',
  'method',
  'route',
  'resource_id',
  'answer_id',
  'status',
  'duration_ms',
  'ip',
  'forwarded_for',
  'peer',
  'user_agent',
  'req_id',
] as const;

/** Rows in one INSERT at most; batches are cut into powers of two, so a handful of statement texts serve every size. */
const CHUNK = 64;

const valuesOf = (r: AuditRecord): unknown[] => [
  r.timeMs,
  r.node,
  r.accountId,
  r.keyId,
  r.keyLast4,
  r.method,
  r.route,
  r.resourceId,
  r.answerId,
  r.status,
  r.durationMs,
  r.ip,
  r.forwardedFor,
  r.peer,
  r.userAgent,
  r.reqId,
];

type Raw = Record<(typeof COLUMNS)[number], unknown> & { seq: unknown; account_name: string | null };

/** The `audit_log` table: appended to by every API server, read by `devboxd audit`, pruned by age. */
export class SqlAuditStore {
  constructor(private readonly db: SqlExecutor) {}

  /** Appends `records` in one transaction (one commit, one fsync on SQLite, whatever their number). */
  async insert(records: readonly AuditRecord[]): Promise<void> {
    if (!records.length) return;
    await this.db.transaction(async (tx) => {
      for (let i = 0; i < records.length; ) {
        let n = CHUNK;
        while (n > records.length - i) n /= 2;
        const row = `(${COLUMNS.map(() => '?').join(', ')})`;
        await tx.query(`INSERT INTO audit_log (${COLUMNS.join(', ')}) VALUES ${Array(n).fill(row).join(', ')}`, records.slice(i, i + n).flatMap(valuesOf));
        i += n;
      }
    });
  }

  async list(f: AuditFilter): Promise<AuditRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, ...values: unknown[]) => {
      where.push(clause);
      params.push(...values);
    };
    if (f.accountId !== undefined) add('a.account_id = ?', f.accountId);
    if (f.keyId !== undefined) add('a.key_id = ?', f.keyId);
    if (f.resourceId !== undefined) add('(a.resource_id = ? OR a.answer_id = ?)', f.resourceId, f.resourceId);
    if (f.route !== undefined) add(`lower(a.method || ' ' || a.route) LIKE ? ESCAPE '\\'`, `%${f.route.toLowerCase().replace(/[\\%_]/g, '\\$&')}%`);
    if (f.sinceMs !== undefined) add('a.time_ms >= ?', f.sinceMs);
    if (f.untilMs !== undefined) add('a.time_ms < ?', f.untilMs);
    if (f.status) add('a.status BETWEEN ? AND ?', f.status.min, f.status.max);
    const { rows } = await this.db.query<Raw>(
      `SELECT a.*, acc.name AS account_name FROM audit_log a LEFT JOIN accounts acc ON acc.id = a.account_id
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY a.time_ms DESC, a.seq DESC LIMIT ?`,
      [...params, f.limit],
    );
    return rows.map(fromRow);
  }

  /** Deletes up to `batch` of the oldest rows older than `beforeMs`; answers how many went. */
  async prune(beforeMs: number, batch: number): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE time_ms < ? ORDER BY time_ms LIMIT ?)', [
      beforeMs,
      batch,
    ]);
    return rowCount;
  }
}

const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function fromRow(r: Raw): AuditRow {
  return {
    seq: Number(r.seq),
    timeMs: Number(r.time_ms),
    node: String(r.node),
    accountId: text(r.account_id),
    accountName: r.account_name ?? null,
    keyId: text(r.key_id),
    keyLast4: text(r.key_last4),
    method: String(r.method),
    route: String(r.route),
    resourceId: text(r.resource_id),
    answerId: text(r.answer_id),
    status: Number(r.status),
    durationMs: Number(r.duration_ms),
    ip: text(r.ip),
    forwardedFor: text(r.forwarded_for),
    peer: text(r.peer),
    userAgent: text(r.user_agent),
    reqId: text(r.req_id),
  };
}
