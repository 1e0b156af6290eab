import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Executions and devbox logs in the API reference (/docs). */
export const executionOperations: OperationDocs = {
  tag: 'Executions',
  operations: {
    'POST /v1/devboxes/{id}/execute': {
      sdk: ['devboxes.execute'],
      summary: 'Run a command, waiting a while for it to finish',
      description:
        'Starts `command` in the devbox and holds the request up to `optimistic_timeout` seconds (at most 25) for it to complete, then ' +
        'answers the execution as it is: with its exit status and the last `last_n` lines of output if it completed, else still running ' +
        '(never a timeout). A retry with the same `command_id` (the SDK always sends one) answers that first execution, not a second run.',
    },
    'POST /v1/devboxes/{id}/execute_async': {
      sdk: ['devboxes.executeAsync', 'devboxes.executions.executeAsync'],
      summary: 'Start a command',
      description:
        'Starts `command` in the devbox and answers at once with the execution id. Follow it with `wait_for_status`, the output streams or ' +
        'a retrieve; with `attach_stdin` its standard input stays open for `send_std_in`.',
    },
    'POST /v1/devboxes/{id}/execute_sync': {
      sdk: ['devboxes.executeSync', 'devboxes.executions.executeSync'],
      summary: 'Run a command and wait for it (deprecated)',
      description:
        'Runs `command` and holds the request up to 25 s for it to finish; a command still running then is answered with a null exit ' +
        'status and its output so far. Deprecated in the SDK: use `execute` or `execute_async`.',
    },
    'GET /v1/devboxes/{id}/executions/{execution_id}': {
      sdk: ['devboxes.executions.retrieve'],
      summary: 'Get an execution',
      description: 'The execution as it is now; once it completed, its exit status and the last `last_n` lines (default 100) of stdout and stderr.',
    },
    'POST /v1/devboxes/{id}/executions/{execution_id}/wait_for_status': {
      sdk: ['devboxes.waitForCommand', 'devboxes.executions.awaitCompleted'],
      summary: 'Wait for an execution status (long-poll)',
      description:
        'Holds the request until the execution reaches one of `statuses` and answers it, output included once completed. After ' +
        '`timeout_seconds` (at most 25) it answers 408 with `x-should-retry: true`, and the SDK asks again at once.',
    },
    'POST /v1/devboxes/{id}/executions/{execution_id}/kill': {
      sdk: ['devboxes.executions.kill'],
      summary: 'Kill an execution',
      description:
        'Kills the command (with `kill_process_group`, every process of its group) and answers once it is gone, with its final view. ' +
        'Killing a finished execution answers it as it is.',
    },
    'POST /v1/devboxes/{id}/executions/{execution_id}/send_std_in': {
      sdk: ['devboxes.executions.sendStdIn'],
      summary: "Write to an execution's standard input",
      description:
        'Sends `text` to the standard input of an execution started with `attach_stdin`, or a `signal`: `EOF` closes that input, ' +
        '`INTERRUPT` sends SIGINT to its process group (any running execution). A completed execution is a 400.',
    },
    'GET /v1/devboxes/{id}/executions/{execution_id}/stream_stdout_updates': {
      sdk: ['devboxes.executions.streamStdoutUpdates'],
      summary: "Stream an execution's stdout (SSE)",
      description:
        'Server-sent events `{"output", "offset"}`, one per line, from byte `offset` on: what was written so far, then live output. The ' +
        'stream ends once the execution completed and every byte went out; a client that reconnects passes the last offset it saw.',
    },
    'GET /v1/devboxes/{id}/executions/{execution_id}/stream_stderr_updates': {
      sdk: ['devboxes.executions.streamStderrUpdates'],
      summary: "Stream an execution's stderr (SSE)",
      description: 'As the stdout stream, for standard error.',
    },
    'GET /v1/devboxes/{id}/logs': {
      sdk: ['devboxes.logs.list'],
      tag: 'Logs',
      summary: "List a devbox's logs",
      description:
        "The devbox's log entries so far: launch commands, entrypoint, executions, file transfers and kernel messages. `execution_id` and " +
        '`shell_name` filter them.',
    },
    'GET /v1/devboxes/{id}/logs/tail': {
      own: 'devboxes.logs.tail',
      tag: 'Logs',
      summary: "Follow a devbox's logs (SSE)",
      description:
        'Server-sent events, one per log entry: the entries so far, then new ones as they are written, with the same filters as the list. ' +
        'The stream ends once the devbox has ended.',
    },
  },
};
