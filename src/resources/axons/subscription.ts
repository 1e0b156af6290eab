import type { AxonEvent } from './types.js';

/** One read of stored events: at most this many, and no more payload than this (one event at least). */
export interface PageBound {
  events: number;
  bytes: number;
}

/** What a subscription reads from the store: events after a sequence (up to one, when given), oldest first, one page. */
export type EventReader = (axonId: string, afterSequence: number, page: PageBound, upTo?: number) => Promise<AxonEvent[]>;

/** Why a subscription ended: the client left, it fell behind (it may resume), or the axon was deleted. */
export type EndReason = { kind: 'closed' } | { kind: 'overflow'; message: string } | { kind: 'deleted'; message: string };

/** Bounds of one subscriber's queue of live events (events and bytes); beyond either it is ended. */
export interface QueueLimits {
  maxEvents: number;
  maxBytes: number;
}

/**
 * A store read: about 1 MiB of payload (one event of at most 256 KiB past it), so what one subscriber holds
 * while its backlog is written stays small whatever the events' sizes.
 */
export const PAGE: PageBound = { events: 256, bytes: 1024 * 1024 };

/**
 * One subscriber of an axon: the stored events after its sequence, then the live ones, in order, each once.
 * It is registered with the hub before the backlog is read, so an event published meanwhile is both queued
 * and (maybe) read: whatever is at or below the last sequence handed out is skipped. A live event that comes
 * after a gap (a publish on another server, or two local publishes whose announcements crossed) first gets
 * the missing ones from the store, where they are already committed (sequences are taken in commit order).
 */
export class Subscription {
  private queue: AxonEvent[] = [];
  private queuedBytes = 0;
  private wake: (() => void) | null = null;
  private ended: EndReason | null = null;
  /** Called once when it ends (a writer blocked on a slow client stops at once). */
  onEnd: ((reason: EndReason) => void) | null = null;

  constructor(
    readonly axonId: string,
    /** The last sequence handed out (the resume point). */
    public lastSequence: number,
    private readonly read: EventReader,
    private readonly limits: QueueLimits,
  ) {}

  get endReason(): EndReason | null {
    return this.ended;
  }

  /** A live event (from the hub). A queue over its bounds ends the subscription: it resumes from the store. */
  push(e: AxonEvent): void {
    if (this.ended) return;
    this.queue.push(e);
    this.queuedBytes += e.payload.length + 256;
    if (this.queue.length > this.limits.maxEvents || this.queuedBytes > this.limits.maxBytes) {
      this.end({
        kind: 'overflow',
        message: `subscriber fell behind (more than ${this.limits.maxEvents} events or ${this.limits.maxBytes} bytes waiting); resume with after_sequence=${this.lastSequence}`,
      });
      return;
    }
    this.poke();
  }

  end(reason: EndReason): void {
    if (this.ended) return;
    this.ended = reason;
    this.queue = [];
    this.queuedBytes = 0;
    this.poke();
    this.onEnd?.(reason);
  }

  /** Batches of events in sequence order until the subscription ends (then `endReason` says why). */
  async *batches(): AsyncGenerator<AxonEvent[]> {
    yield* this.fromStore();
    while (!this.ended) {
      if (this.queue.length === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      const taken = this.queue;
      this.queue = [];
      this.queuedBytes = 0;
      taken.sort((a, b) => a.sequence - b.sequence);
      let batch: AxonEvent[] = [];
      for (const e of taken) {
        if (e.sequence <= this.lastSequence) continue;
        if (e.sequence > this.lastSequence + 1) {
          if (batch.length) yield this.handOut(batch);
          batch = [];
          yield* this.fromStore(e.sequence - 1);
          if (this.ended) return;
          if (e.sequence <= this.lastSequence) continue;
        }
        batch.push(e);
        this.lastSequence = e.sequence;
      }
      if (batch.length && !this.ended) yield batch;
    }
  }

  private handOut(batch: AxonEvent[]): AxonEvent[] {
    this.lastSequence = batch[batch.length - 1]!.sequence;
    return batch;
  }

  /** The stored events after the last handed out (up to `upTo`), page by page. */
  private async *fromStore(upTo?: number): AsyncGenerator<AxonEvent[]> {
    while (!this.ended) {
      const page = await this.read(this.axonId, this.lastSequence, PAGE, upTo);
      if (page.length === 0) {
        // Events pruned (retention) or never committed here: the gap stays, the stream goes on after it.
        if (upTo !== undefined) this.lastSequence = Math.max(this.lastSequence, upTo);
        return;
      }
      if (this.ended) return;
      yield this.handOut(page);
      // A short page may be short by bytes: only an empty read (or reaching upTo) says the backlog is done.
      if (upTo !== undefined && this.lastSequence >= upTo) return;
    }
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
