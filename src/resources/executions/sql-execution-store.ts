import { marks, type SqlExecutor } from '../../platform/store/sql/executor.js';
import type { Execution, ExecutionKind, ExecutionStatus, LogEntryInput } from './types.js';
import type { ExecutionStore } from './execution-store.js';
import { SqlLogStore } from './sql-log-store.js';

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
const INSERT = `INSERT INTO executions (${COLUMNS.join(', ')}) VALUES (${marks(COLUMNS)})`;

export class SqlExecutionStore implements ExecutionStore {
  constructor(private readonly db: SqlExecutor) {}

  async insert(e: Execution): Promise<void> {
    const row = toRow(e) as unknown as Record<string, unknown>;
    await this.db.query(
      INSERT,
      COLUMNS.map((c) => row[c]),
    );
  }

  async update(e: Execution): Promise<void> {
    // A completed execution stays as it was recorded: a late write of an older state cannot reopen it.
    await this.db.query(
      `UPDATE executions SET status = ?, exit_status = ?, end_time_ms = ?, stdout_bytes = ?, stderr_bytes = ?
       WHERE id = ? AND status != 'completed'`,
      [e.status, e.exitStatus, e.endTimeMs, e.stdoutBytes, e.stderrBytes, e.id],
    );
  }

  async save(e: Execution, insert: boolean, entries: LogEntryInput[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      const records = new SqlExecutionStore(tx);
      await (insert ? records.insert(e) : records.update(e));
      await new SqlLogStore(tx).append(entries);
    });
  }

  async get(devboxId: string, id: string): Promise<Execution | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM executions WHERE devbox_id = ? AND id = ?', [devboxId, id]);
    return rows[0] && fromRow(rows[0]);
  }

  async findByCommandId(devboxId: string, commandId: string): Promise<Execution | undefined> {
    const { rows } = await this.db.query<Row>('SELECT * FROM executions WHERE devbox_id = ? AND command_id = ?', [devboxId, commandId]);
    return rows[0] && fromRow(rows[0]);
  }

  async listUnfinished(node?: string): Promise<Execution[]> {
    const byNode = node === undefined ? '' : " AND devbox_id IN (SELECT id FROM devboxes WHERE node = ? OR node = '')";
    const { rows } = await this.db.query<Row>(`SELECT * FROM executions WHERE status != 'completed'${byNode} ORDER BY id`, node === undefined ? [] : [node]);
    return rows.map(fromRow);
  }
}
