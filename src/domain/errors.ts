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
  | 'payload_too_large'
  | 'timeout'
  | 'too_many_requests'
  | 'unavailable'
  | 'internal';

export const STATUS_OF: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
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
  fileNotFound: (path: string) => new DomainError('not_found', `file not found: ${path}`),
  /** A state conflict no retry fixes (the SDK retries 409s unless told otherwise). */
  conflict: (message: string) => new DomainError('conflict', message, false),
  /** A precondition on the resource's state: 400 so the SDK does not retry. */
  badState: (message: string) => new DomainError('invalid_request', message),
  tooLarge: (message: string) => new DomainError('payload_too_large', message),
  waitTimeout: (message: string) => new DomainError('timeout', message),
  unavailable: (message: string) => new DomainError('unavailable', message),
  /** Too much of one kind of work in progress: 429 with Retry-After (the SDK waits and retries). */
  busy: (message: string, retryAfterSeconds = 1) => new DomainError('too_many_requests', message, true, retryAfterSeconds),
  internal: (message: string) => new DomainError('internal', message),
};
