import type { SqlExecutor } from '../../platform/store/sql/executor.js';
import type { LogEntry, LogEntryInput, LogFilter, LogSource } from './types.js';
import type { LogStore } from './execution-store.js';

interface Row {
  seq: number;
  devbox_id: string;
  timestamp_ms: number;
  level: LogEntry['level'];
  source: LogSource;
  cmd: string | null;
  cmd_id: string | null;
  exit_code: number | null;
  message: string | null;
  shell_name: string | null;
}

const fromRow = (r: Row): LogEntry => ({
  seq: r.seq,
  devboxId: r.devbox_id,
  timestampMs: r.timestamp_ms,
  level: r.level,
  source: r.source,
  cmd: r.cmd,
  cmdId: r.cmd_id,
  exitCode: r.exit_code,
  message: r.message,
  shellName: r.shell_name,
});

const INSERT = `INSERT INTO devbox_logs (devbox_id, timestamp_ms, level, source, cmd, cmd_id, exit_code, message, shell_name)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`;

/** The devbox log (`devbox_logs`): an append-only sequence per devbox. */
export class SqlLogStore implements LogStore {
  constructor(private readonly db: SqlExecutor) {}

  async append(entries: LogEntryInput[]): Promise<LogEntry[]> {
    if (!entries.length) return [];
    // One transaction per batch: one disk sync (SQLite) or one commit (PostgreSQL) for many lines.
    return this.db.transaction(async (tx) => {
      const out: LogEntry[] = [];
      for (const e of entries) {
        const { rows } = await tx.query<{ seq: number }>(INSERT, [
          e.devboxId,
          e.timestampMs,
          e.level,
          e.source,
          e.cmd ?? null,
          e.cmdId ?? null,
          e.exitCode ?? null,
          e.message ?? null,
          e.shellName ?? null,
        ]);
        out.push({ ...e, seq: Number(rows[0]!.seq) });
      }
      return out;
    });
  }

  async list(devboxId: string, filter: LogFilter): Promise<LogEntry[]> {
    const where = ['devbox_id = ?'];
    const params: unknown[] = [devboxId];
    if (filter.executionId) {
      where.push('cmd_id = ?');
      params.push(filter.executionId);
    }
    if (filter.shellName) {
      where.push('shell_name = ?');
      params.push(filter.shellName);
    }
    if (filter.afterSeq !== undefined) {
      where.push('seq > ?');
      params.push(filter.afterSeq);
    }
    const { rows } = await this.db.query<Row>(`SELECT * FROM devbox_logs WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`, [
      ...params,
      filter.limit ?? 10_000,
    ]);
    return rows.map(fromRow);
  }
}
