import type { Db } from './db.js';
import type { Execution, ExecutionKind, ExecutionStatus } from '../../domain/executions/types.js';
import type { ExecutionStore } from '../types.js';

interface Row {
  id: string;
  account_id: string;
  devbox_id: string;
  command: string;
  command_id: string | null;
  shell_name: string | null;
  kind: ExecutionKind;
  status: ExecutionStatus;
  exit_status: number | null;
  create_time_ms: number;
  end_time_ms: number | null;
  stdout_bytes: number;
  stderr_bytes: number;
}

const fromRow = (r: Row): Execution => ({
  id: r.id,
  accountId: r.account_id,
  devboxId: r.devbox_id,
  command: r.command,
  commandId: r.command_id,
  shellName: r.shell_name,
  kind: r.kind,
  status: r.status,
  exitStatus: r.exit_status,
  createTimeMs: r.create_time_ms,
  endTimeMs: r.end_time_ms,
  stdoutBytes: r.stdout_bytes,
  stderrBytes: r.stderr_bytes,
});

const toRow = (e: Execution): Row => ({
  id: e.id,
  account_id: e.accountId,
  devbox_id: e.devboxId,
  command: e.command,
  command_id: e.commandId,
  shell_name: e.shellName,
  kind: e.kind,
  status: e.status,
  exit_status: e.exitStatus,
  create_time_ms: e.createTimeMs,
  end_time_ms: e.endTimeMs,
  stdout_bytes: e.stdoutBytes,
  stderr_bytes: e.stderrBytes,
});

const COLUMNS = Object.keys(toRow({} as Execution));

export class SqliteExecutionStore implements ExecutionStore {
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly getStmt;
  private readonly byCommandStmt;
  private readonly unfinishedStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO executions (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
    );
    this.updateStmt = db.prepare(
      `UPDATE executions SET status = @status, exit_status = @exit_status, end_time_ms = @end_time_ms,
         stdout_bytes = @stdout_bytes, stderr_bytes = @stderr_bytes WHERE id = @id`,
    );
    this.getStmt = db.prepare('SELECT * FROM executions WHERE devbox_id = ? AND id = ?');
    this.byCommandStmt = db.prepare('SELECT * FROM executions WHERE devbox_id = ? AND command_id = ?');
    this.unfinishedStmt = db.prepare("SELECT * FROM executions WHERE status != 'completed' ORDER BY id");
  }

  insert(e: Execution): void {
    this.insertStmt.run(toRow(e));
  }

  update(e: Execution): void {
    this.updateStmt.run(toRow(e));
  }

  get(devboxId: string, id: string): Execution | undefined {
    const r = this.getStmt.get(devboxId, id) as Row | undefined;
    return r && fromRow(r);
  }

  findByCommandId(devboxId: string, commandId: string): Execution | undefined {
    const r = this.byCommandStmt.get(devboxId, commandId) as Row | undefined;
    return r && fromRow(r);
  }

  listUnfinished(): Execution[] {
    return (this.unfinishedStmt.all() as Row[]).map(fromRow);
  }

  atomically<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }
}
