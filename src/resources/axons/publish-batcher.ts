import type { AppendItem, AppendOutcome, Retention } from './event-append.js';
import type { SqlAxonStore } from './sql-axon-store.js';

interface Pending {
  item: AppendItem;
  resolve: (e: AppendOutcome) => void;
  reject: (err: unknown) => void;
}

/** Publishes committed together at most (a bound on one transaction's length). */
const BATCH_MAX = 256;

/**
 * Group commit: a publish that arrives while a commit is in flight waits for it and then goes with every other
 * one that waited, in one transaction. One publish alone commits at once; under load the commits (each an
 * fsync with synchronous=FULL) are shared, so events/s grows with the publishes in flight. The queue is as
 * long as the requests in flight (each holds one), which the server's connection limits bound.
 */
export class PublishBatcher {
  private pending: Pending[] = [];
  private running = false;

  constructor(
    private readonly store: SqlAxonStore,
    private readonly keep: Retention,
  ) {}

  append(item: AppendItem): Promise<AppendOutcome> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.running) return;
      this.running = true;
      // A turn of the event loop first: requests released together (by the end of a transaction their
      // reads waited on) reach this queue before the commit starts, and share it.
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, BATCH_MAX);
        try {
          const events = await this.store.appendAll(
            batch.map((p) => p.item),
            this.keep,
          );
          batch.forEach((p, i) => p.resolve(events[i]!));
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
