import type { Db } from './db.js';
import type { LogEntry, LogEntryInput, LogFilter, LogSource } from '../../domain/executions/types.js';
import type { LogStore } from '../types.js';

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

/** The devbox log (`devbox_logs`): an append-only sequence per devbox. */
export class SqliteLogStore implements LogStore {
  private readonly insertStmt;
  private readonly appendMany;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO devbox_logs (devbox_id, timestamp_ms, level, source, cmd, cmd_id, exit_code, message, shell_name)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.appendMany = db.transaction((entries: LogEntryInput[]) =>
      entries.map((e): LogEntry => {
        const { lastInsertRowid } = this.insertStmt.run(
          e.devboxId,
          e.timestampMs,
          e.level,
          e.source,
          e.cmd ?? null,
          e.cmdId ?? null,
          e.exitCode ?? null,
          e.message ?? null,
          e.shellName ?? null,
        );
        return { ...e, seq: Number(lastInsertRowid) };
      }),
    );
  }

  append(entries: LogEntryInput[]): LogEntry[] {
    return entries.length ? this.appendMany(entries) : [];
  }

  list(devboxId: string, filter: LogFilter): LogEntry[] {
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
    const limit = filter.limit ?? 10_000;
    const rows = this.db
      .prepare(`SELECT * FROM devbox_logs WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`)
      .all(...params, limit) as Row[];
    return rows.map(fromRow);
  }
}
