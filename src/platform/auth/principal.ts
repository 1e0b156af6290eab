/**
 * Who is calling and what a key may reach: the kinds the HTTP platform (auth, context, the key check) and
 * every resource's routes share. They live below the resources so the platform need not import the accounts
 * resource for them; the accounts resource implements `Authenticator` (AccountService).
 */
import type { AccessLevel, ApiKey, Scope } from '../store/types.js';

export const RESOURCE_TYPES = [
  'RESOURCE_TYPE_DEVBOXES',
  'RESOURCE_TYPE_BLUEPRINTS',
  'RESOURCE_TYPE_SNAPSHOTS',
  'RESOURCE_TYPE_BENCHMARKS',
  'RESOURCE_TYPE_SCENARIOS',
  'RESOURCE_TYPE_AGENTS',
  'RESOURCE_TYPE_OBJECTS',
  'RESOURCE_TYPE_ACCOUNT',
] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** Who is calling: the account every query is scoped to, and what the key may do. */
export interface Principal {
  accountId: string;
  keyId: string;
  kind: ApiKey['kind'];
  scopes: Scope[];
  expiresAtMs: number | null;
}

/** Access levels in order: a grant covers every level at or below its own. */
export const RANK: Record<AccessLevel, number> = { none: 0, read: 1, write: 2 };

/** What `scopes` grant on `resource` (none where no scope names it). */
export const grantOf = (scopes: Scope[], resource: string): AccessLevel => scopes.find((s) => s.resourceType === resource)?.accessLevel ?? 'none';

/** Whether the key grants `level` on `resource`: standard keys every level, restricted keys what their scopes say. */
export function allows(p: Principal, resource: ResourceType, level: 'read' | 'write'): boolean {
  return p.kind === 'standard' || RANK[grantOf(p.scopes, resource)] >= RANK[level];
}

/** Whether two principals grant the same: a hint used ahead of a key's check must match what the check found. */
export function samePrincipal(a: Principal, b: Principal): boolean {
  return (
    a.accountId === b.accountId &&
    a.keyId === b.keyId &&
    a.kind === b.kind &&
    a.expiresAtMs === b.expiresAtMs &&
    JSON.stringify(a.scopes) === JSON.stringify(b.scopes)
  );
}

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
