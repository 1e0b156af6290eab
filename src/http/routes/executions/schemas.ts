import { Type } from 'typebox';
import type { ExecutionOutput } from '../../../domain/executions/execution-service.js';
import { EXECUTION_STATUSES, type Execution, type LogEntry } from '../../../domain/executions/types.js';
import { ArgString, Opt, StringEnum } from '../../schemas/common.js';

export const DEFAULT_LAST_N = 100;

export const DevboxParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
export const ExecutionParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  execution_id: Type.String({ minLength: 1, maxLength: 200 }),
});

/** `last_n` is a string on the wire (the SDK types it so): digits, or empty for the default. */
export const LastNQuery = Type.Object({ last_n: Type.Optional(Type.String({ pattern: '^[0-9]{0,9}$' })) });
export const lastNOf = (q: { last_n?: string }) => (q.last_n ? Number(q.last_n) : DEFAULT_LAST_N);

export const ExecutionStatusSchema = StringEnum([...EXECUTION_STATUSES]);
/** Printable ASCII: the name is hex-encoded into a file name inside the box, which must fit NAME_MAX. */
export const ShellName = Opt(Type.String({ minLength: 1, maxLength: 100, pattern: '^[\\x20-\\x7e]*$' }));
export const Command = ArgString({ minLength: 1, maxLength: 120_000 });

/** DevboxAsyncExecutionDetailView: output only once completed. */
export function toAsyncView(e: Execution, out: ExecutionOutput | null) {
  return {
    devbox_id: e.devboxId,
    execution_id: e.id,
    status: e.status,
    exit_status: e.exitStatus,
    shell_name: e.shellName,
    ...(out && e.status === 'completed'
      ? { stdout: out.stdout.text, stderr: out.stderr.text, stdout_truncated: out.stdout.truncated, stderr_truncated: out.stderr.truncated }
      : {}),
  };
}

/** DevboxExecutionDetailView (execute_sync). */
export function toSyncView(e: Execution, out: ExecutionOutput) {
  return { devbox_id: e.devboxId, exit_status: e.exitStatus, stdout: out.stdout.text, stderr: out.stderr.text, shell_name: e.shellName };
}

/** One entry of GET /v1/devboxes/{id}/logs (and one event of logs/tail). */
export function toLogView(l: LogEntry) {
  return {
    level: l.level,
    source: l.source,
    timestamp_ms: l.timestampMs,
    cmd: l.cmd ?? null,
    cmd_id: l.cmdId ?? null,
    exit_code: l.exitCode ?? null,
    message: l.message ?? null,
    shell_name: l.shellName ?? null,
  };
}
