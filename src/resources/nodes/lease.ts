import type { LeaseState, NodeRecord } from './types.js';

/**
 * The lease arithmetic, in one place: a node renews its lease every third of it (so two renewals may fail
 * before it runs out), and is declared lost once it has been silent past its lease and its grace. All times
 * are the servers' clocks, which must agree within the grace.
 */
export function renewEveryMs(leaseMs: number): number {
  return Math.max(100, Math.floor(leaseMs / 3));
}

/** The lease a renewal at `nowMs` gives. */
export function leaseUntil(nowMs: number, leaseMs: number): number {
  return nowMs + leaseMs;
}

/** Whether `n`'s lease holds at `nowMs`, ran out, or was left by a graceful stop. */
export function leaseState(n: Pick<NodeRecord, 'leaseExpiresMs' | 'stoppedAtMs'>, nowMs: number): LeaseState {
  if (n.stoppedAtMs !== null) return 'stopped';
  return nowMs <= n.leaseExpiresMs ? 'live' : 'lapsed';
}

/** When a silent `n` is declared lost: its lease's end plus its own grace. */
export function lostAtMs(n: Pick<NodeRecord, 'leaseExpiresMs' | 'graceMs'>): number {
  return n.leaseExpiresMs + n.graceMs;
}

/**
 * Whether another server declares `n` lost at `nowMs`: not already lost, not stopped gracefully (its boxes run
 * on, to be adopted at its next start), and silent past its lease and grace.
 */
export function overdue(n: NodeRecord, nowMs: number): boolean {
  return n.state !== 'lost' && n.stoppedAtMs === null && nowMs > lostAtMs(n);
}

/** The failure reason of the boxes of a lost node: it names the node and its last heartbeat. */
export function lostReason(name: string, heartbeatMs: number): string {
  return `node ${name} stopped answering (no heartbeat since ${new Date(heartbeatMs).toISOString()})`;
}
