/**
 * A counting semaphore with a bounded queue: at most `concurrency` holders at once, at most `queue` waiting.
 * Past both, `enter` answers null at once so the caller can say "busy, retry later" instead of piling work up.
 * Used to bound how much memory requests that hold a whole answer can take together. With a key (the
 * account), one key holds at most `perKey` slots and waits for at most `perKeyQueue` more, and a freed slot
 * goes to the oldest waiter whose key is under its share: one tenant cannot take every slot.
 *
 * @example
 * const release = await gate.enter(signal, accountId);
 * if (!release) throw busy();
 * try { ... } finally { release(); }
 */
interface Waiter {
  key: string | undefined;
  wake: () => void;
}

export class Gate {
  private active = 0;
  private readonly waiting: Waiter[] = [];
  private readonly held = new Map<string, number>();
  private readonly queued = new Map<string, number>();

  constructor(
    readonly concurrency: number,
    readonly queue: number,
    readonly perKey = Infinity,
    readonly perKeyQueue = Infinity,
  ) {}

  /** A gate where one key holds at most half the slots and half the queue: others always get a turn. */
  static fair(concurrency: number, queue: number): Gate {
    return new Gate(concurrency, queue, Math.max(1, Math.floor(concurrency / 2)), Math.max(1, Math.floor(queue / 2)));
  }

  get holders(): number {
    return this.active;
  }

  get waiters(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with a release function (idempotent) once a slot is free; null when the queue (or the key's
   * share of it) is full, or `signal` aborted while waiting (the place in the queue is given up).
   */
  enter(signal?: AbortSignal, key?: string): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    if (this.active < this.concurrency && this.mayHold(key)) return Promise.resolve(this.take(key));
    if (this.waiting.length >= this.queue || (key !== undefined && (this.queued.get(key) ?? 0) >= this.perKeyQueue)) {
      return Promise.resolve(null);
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        key,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.take(key));
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) {
          this.waiting.splice(i, 1);
          bump(this.queued, key, -1);
        }
        resolve(null);
      };
      this.waiting.push(waiter);
      bump(this.queued, key, 1);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private mayHold(key: string | undefined): boolean {
    return key === undefined || (this.held.get(key) ?? 0) < this.perKey;
  }

  private take(key: string | undefined): () => void {
    this.active++;
    bump(this.held, key, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      bump(this.held, key, -1);
      this.wakeNext();
    };
  }

  /** The freed slot goes to the oldest waiter whose key is under its share. */
  private wakeNext(): void {
    if (this.active >= this.concurrency) return;
    const i = this.waiting.findIndex((w) => this.mayHold(w.key));
    if (i < 0) return;
    const [next] = this.waiting.splice(i, 1);
    bump(this.queued, next!.key, -1);
    next!.wake();
  }
}

function bump(counts: Map<string, number>, key: string | undefined, by: number): void {
  if (key === undefined) return;
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
