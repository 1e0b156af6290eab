import { ERRORS } from '../../platform/errors.js';
import { PAGE, Subscription, type EventReader, type QueueLimits } from './subscription.js';
import type { AxonEvent } from './types.js';

export interface HubLimits extends QueueLimits {
  /** Subscribers of one axon at once (SSE streams and broker mounts). */
  maxPerAxon: number;
  /** Subscribers on this server at once. */
  maxTotal: number;
  /** SSE subscribers of one account on this server at once, so one tenant cannot take every slot. */
  maxPerAccount: number;
}

/**
 * Live fan-out of published events to the subscribers on this server. A publish hands its committed event
 * here; every subscriber of the axon queues it (bounded, see Subscription). With PostgreSQL shared by several
 * servers, `catchUp` (polled) finds events another server committed and hands them out the same way; the
 * subscribers' own order and gap filling make a late or repeated hand-out harmless.
 */
export class EventHub {
  private readonly byAxon = new Map<string, Set<Subscription>>();
  private total = 0;
  /** SSE subscribers per account (broker mounts are the server's own and count only in the totals). */
  private readonly byAccount = new Map<string, number>();
  private readonly accountOf = new WeakMap<Subscription, string>();
  /** The newest sequence handed out per axon with subscribers (what catchUp compares with). */
  private readonly newest = new Map<string, number>();

  constructor(
    private readonly read: EventReader,
    private readonly limits: HubLimits,
  ) {}

  /** A subscription from after `afterSequence`; 429 when this axon or this server has too many. */
  subscribe(axonId: string, afterSequence: number, accountId?: string): Subscription {
    const set = this.byAxon.get(axonId) ?? new Set();
    if (set.size >= this.limits.maxPerAxon) throw ERRORS.busy(`axon ${axonId} has ${set.size} subscribers, the most it takes at once`, 5);
    if (this.total >= this.limits.maxTotal) throw ERRORS.busy(`this server has ${this.total} axon subscribers, the most it takes at once`, 5);
    const mine = accountId === undefined ? 0 : (this.byAccount.get(accountId) ?? 0);
    if (accountId !== undefined && mine >= this.limits.maxPerAccount) {
      throw ERRORS.busy(`this account has ${mine} axon streams open on this server, the most one account may hold`, 5);
    }
    const sub = new Subscription(axonId, afterSequence, this.read, this.limits);
    set.add(sub);
    this.byAxon.set(axonId, set);
    this.total++;
    if (accountId !== undefined) {
      this.byAccount.set(accountId, mine + 1);
      this.accountOf.set(sub, accountId);
    }
    return sub;
  }

  unsubscribe(sub: Subscription): void {
    sub.end({ kind: 'closed' });
    const set = this.byAxon.get(sub.axonId);
    if (!set?.delete(sub)) return;
    this.total--;
    const accountId = this.accountOf.get(sub);
    if (accountId !== undefined) {
      const left = (this.byAccount.get(accountId) ?? 1) - 1;
      if (left > 0) this.byAccount.set(accountId, left);
      else this.byAccount.delete(accountId);
    }
    if (set.size === 0) {
      this.byAxon.delete(sub.axonId);
      this.newest.delete(sub.axonId);
    }
  }

  emit(e: AxonEvent): void {
    const set = this.byAxon.get(e.axonId);
    if (!set) return;
    if (e.sequence > (this.newest.get(e.axonId) ?? 0)) this.newest.set(e.axonId, e.sequence);
    for (const sub of set) sub.push(e);
  }

  /** Ends every subscription of a deleted axon. */
  deleted(axonId: string): void {
    for (const sub of [...(this.byAxon.get(axonId) ?? [])]) sub.end({ kind: 'deleted', message: `axon ${axonId} was deleted` });
  }

  subscriberCount(axonId?: string): number {
    return axonId === undefined ? this.total : (this.byAxon.get(axonId)?.size ?? 0);
  }

  /**
   * Hands out events other servers committed: for each axon with subscribers whose newest sequence in the
   * store is past the newest seen here, the events after it (one page; the next poll takes the rest).
   */
  async catchUp(lastSequences: (ids: string[]) => Promise<Map<string, number>>): Promise<void> {
    const ids = [...this.byAxon.keys()];
    if (ids.length === 0) return;
    const stored = await lastSequences(ids);
    for (const [id, last] of stored) {
      const subs = this.byAxon.get(id);
      if (!subs) continue;
      // Nothing handed out here yet: from where the furthest-behind subscriber is.
      const seen = this.newest.get(id) ?? Math.min(...[...subs].map((s) => s.lastSequence));
      if (last <= seen) continue;
      for (const e of await this.read(id, seen, PAGE)) this.emit(e);
    }
  }
}
