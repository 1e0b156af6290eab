/**
 * One registry of error codes. Each code maps to an HTTP status here, and the compiler checks the map is
 * exhaustive; errors are made through the named factories in ERRORS so messages stay consistent.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'idempotency_mismatch'
  | 'payload_too_large'
  | 'range_not_satisfiable'
  | 'timeout'
  | 'too_many_requests'
  | 'unavailable'
  | 'internal'
  // Specific codes: the status of the general one they refine, a name a client can branch on.
  | 'devbox_not_running'
  | 'devbox_not_suspended'
  | 'devbox_ended'
  | 'snapshot_in_progress'
  | 'snapshot_not_complete'
  | 'execution_completed'
  | 'stdin_not_attached'
  | 'file_not_found'
  | 'path_not_a_file'
  | 'permission_denied';

export const STATUS_OF: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  timeout: 408,
  conflict: 409,
  idempotency_mismatch: 422,
  payload_too_large: 413,
  range_not_satisfiable: 416,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
  devbox_not_running: 400,
  devbox_not_suspended: 400,
  devbox_ended: 400,
  snapshot_in_progress: 409,
  snapshot_not_complete: 400,
  execution_completed: 400,
  stdin_not_attached: 400,
  file_not_found: 404,
  path_not_a_file: 400,
  permission_denied: 403,
};

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** False when a retry of the same request cannot succeed (sent as x-should-retry). */
    readonly retryable?: boolean,
    /** Seconds a client should wait before retrying (sent as Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
  get status(): number {
    return STATUS_OF[this.code];
  }
}

export const ERRORS = {
  invalid: (message: string) => new DomainError('invalid_request', message),
  unauthenticated: (message: string) => new DomainError('unauthenticated', message),
  forbidden: (message: string) => new DomainError('forbidden', message),
  notFound: (kind: string, id: string) => new DomainError('not_found', `${kind} ${id} not found`),
  fileNotFound: (path: string) => new DomainError('file_not_found', `file not found: ${path}`),
  /** A path that is a directory, or runs through a file where a directory should be. */
  notAFile: (message: string) => new DomainError('path_not_a_file', message),
  permissionDenied: (path: string) => new DomainError('permission_denied', `permission denied: ${path}`),
  /** 400 rather than 409: the SDK retries 409s and the box's state will not change by retrying. */
  devboxNotRunning: (id: string, status: string) => new DomainError('devbox_not_running', `devbox ${id} is ${status}, not running`),
  devboxNotSuspended: (id: string, status: string) => new DomainError('devbox_not_suspended', `devbox ${id} is ${status}, not suspended`),
  /** The devbox is shut down or failed: nothing changes it any more. */
  devboxEnded: (id: string, status: string) => new DomainError('devbox_ended', `devbox ${id} is ${status}`),
  /** One snapshot at a time per devbox; the message says what to do meanwhile. 409, not retried. */
  snapshotInProgress: (message: string) => new DomainError('snapshot_in_progress', message, false),
  snapshotNotComplete: (id: string, status: string) => new DomainError('snapshot_not_complete', `snapshot ${id} is ${status}, not complete`),
  executionCompleted: (id: string) => new DomainError('execution_completed', `execution ${id} is completed`),
  stdinNotAttached: (id: string) =>
    new DomainError('stdin_not_attached', `execution ${id} has no stdin attached; start it with execute_async and attach_stdin: true`),
  /** A state conflict no retry fixes (the SDK retries 409s unless told otherwise). */
  conflict: (message: string) => new DomainError('conflict', message, false),
  /** A precondition on the resource's state: 400 so the SDK does not retry. */
  badState: (message: string) => new DomainError('invalid_request', message),
  /** Another request with this x-request-id still runs after the wait: 409, which the SDK retries. */
  requestInFlight: (requestId: string) =>
    new DomainError('conflict', `a request with x-request-id "${requestId}" is still in progress; retry with the same id to get its answer`),
  /** An x-request-id reused with another body: replaying the first answer would answer a different question. */
  requestIdReused: (requestId: string) =>
    new DomainError('idempotency_mismatch', `x-request-id "${requestId}" was already used with a different request body on this route; use a new id`),
  tooLarge: (message: string) => new DomainError('payload_too_large', message),
  /** A Range no byte of the resource is in (416; the answer says the size in Content-Range). */
  rangeNotSatisfiable: (message: string) => new DomainError('range_not_satisfiable', message, false),
  waitTimeout: (message: string) => new DomainError('timeout', message),
  unavailable: (message: string) => new DomainError('unavailable', message),
  /** Too much of one kind of work in progress: 429 with Retry-After (the SDK waits and retries). */
  busy: (message: string, retryAfterSeconds = 1) => new DomainError('too_many_requests', message, true, retryAfterSeconds),
  internal: (message: string) => new DomainError('internal', message),
};
