/**
 * A counting semaphore with a bounded queue: at most `concurrency` holders at once, at most `queue` waiting.
 * Past both, `enter` answers null at once so the caller can say "busy, retry later" instead of piling work up.
 * Used to bound how much memory requests that hold a whole answer can take together.
 *
 * @example
 * const release = await gate.enter(signal);
 * if (!release) throw busy();
 * try { ... } finally { release(); }
 */
export class Gate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly concurrency: number,
    readonly queue: number,
  ) {}

  get holders(): number {
    return this.active;
  }

  get waiters(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with a release function (idempotent) once a slot is free; null when the queue is full or
   * `signal` aborted while waiting (the place in the queue is given up).
   */
  enter(signal?: AbortSignal): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    if (this.active < this.concurrency) return Promise.resolve(this.take());
    if (this.waiting.length >= this.queue) return Promise.resolve(null);
    return new Promise((resolve) => {
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(this.take());
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(wake);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(null);
      };
      this.waiting.push(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private take(): () => void {
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      // The slot passes straight to the next waiter (active goes back up in take).
      this.waiting.shift()?.();
    };
  }
}
