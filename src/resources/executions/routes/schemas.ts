import { Type } from 'typebox';
import type { ExecutionOutput } from '../execution-service.js';
import { EXECUTION_STATUSES, type Execution, type LogEntry } from '../types.js';
import { ArgString, ERROR_RESPONSES, Int, Opt, OrNull, StringEnum } from '../../../platform/http/schemas/common.js';

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

/** DevboxAsyncExecutionDetailView as `toAsyncView` writes it. */
export const AsyncViewSchema = Type.Object(
  {
    devbox_id: Type.String(),
    execution_id: Type.String(),
    status: ExecutionStatusSchema,
    exit_status: OrNull(Int),
    shell_name: OrNull(Type.String()),
    stdout: Type.Optional(Type.String({ description: 'the last last_n lines, once completed' })),
    stderr: Type.Optional(Type.String({ description: 'the last last_n lines, once completed' })),
    stdout_truncated: Type.Optional(Type.Boolean()),
    stderr_truncated: Type.Optional(Type.Boolean()),
  },
  { title: 'DevboxAsyncExecutionDetailView', description: 'an execution: its status and, once completed, exit status and output' },
);

/** DevboxExecutionDetailView (execute_sync, write_file_contents). */
export const SyncViewSchema = Type.Object(
  {
    devbox_id: Type.String(),
    exit_status: OrNull(Int),
    stdout: Type.String(),
    stderr: Type.String(),
    shell_name: Type.Optional(OrNull(Type.String())),
  },
  { title: 'DevboxExecutionDetailView', description: "a finished command's exit status and output" },
);

/** One devbox log entry (`toLogView`). */
export const LogViewSchema = Type.Object({
  level: Type.String(),
  source: Type.String(),
  timestamp_ms: Int,
  cmd: OrNull(Type.String()),
  cmd_id: OrNull(Type.String()),
  exit_code: OrNull(Int),
  message: OrNull(Type.String()),
  shell_name: OrNull(Type.String()),
});

/** A server-sent event stream: errors before it starts are JSON. */
export const sseReplies = (description: string) => ({
  200: { description, content: { 'text/event-stream': { schema: Type.String() } } },
  ...ERROR_RESPONSES,
});

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
