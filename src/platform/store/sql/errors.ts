import { DomainError, ERRORS } from '../../errors.js';

/** Which constraint a failed write broke, in driver-neutral terms (the executors classify their codes). */
export type ConstraintKind = 'unique' | 'foreign_key' | 'check' | 'not_null';

/**
 * The domain error for a broken constraint. Named constraints get a readable message (the one invariant the
 * domain relies on has its own); the rest are conflicts or invalid input, never a 500.
 */
export function constraintError(kind: ConstraintKind, detail: string): DomainError {
  // PostgreSQL names the index, SQLite the column it covers.
  if (detail.includes('snapshots_one_in_progress') || detail.includes('snapshots.source_devbox_id')) {
    return ERRORS.conflict('the devbox already has a snapshot in progress');
  }
  switch (kind) {
    case 'unique':
      return ERRORS.conflict(`already exists (${detail})`);
    case 'foreign_key':
      return ERRORS.invalid(`refers to something that does not exist (${detail})`);
    case 'check':
    case 'not_null':
      return ERRORS.invalid(`violates a constraint (${detail})`);
  }
}

/** A database that cannot answer (connection refused, pool exhausted, busy past its timeout): retryable 503. */
export const unavailableError = (detail: string): DomainError => ERRORS.unavailable(`the database is unavailable: ${detail}`);
