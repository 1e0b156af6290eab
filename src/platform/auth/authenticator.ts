import type { ApiKey } from '../store/types.js';
import type { Principal, ResourceType } from './principal.js';

/**
 * What the HTTP platform asks of the accounts resource (AccountService implements it): the auth hook and the
 * overlapped key check name this, not the service, so the platform imports no resource.
 */
export interface Authenticator {
  /** The principal of a bearer secret, checked against the database; throws unauthorized. */
  authenticate(secret: string, nowMs?: number): Promise<Principal>;
  /** The principal last authenticated here for this secret, to run a GET ahead of its check (overlapAuth). */
  hinted(secret: string): { hint: Principal; hash: string } | undefined;
  /** The check `hinted` skipped, by the secret's hash. */
  checkHash(hash: string, nowMs?: number): Promise<Principal>;
  /** The principal a key read by the route's own statement gives (KeyCheck). */
  admit(hash: string, key: ApiKey | undefined, nowMs?: number): Principal;
  /** Throws forbidden unless the principal may do `level` on `resource`. */
  authorize(p: Principal, resource: ResourceType, level: 'read' | 'write'): void;
  /** Throws forbidden unless the principal is an operator of the server. */
  authorizeOperator(p: Principal): Promise<void>;
}
