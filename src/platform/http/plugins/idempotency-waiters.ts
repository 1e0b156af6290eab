/**
 * In-process wake-ups for requests waiting on another request's x-request-id. The owner calls `notify` once
 * its claim is completed or released; a waiter on another server process sharing the database is not
 * notified and finds out on its next poll, so a wait always ends after `ms` at the latest.
 */
export class ClaimWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Resolves on `notify(key)`, after `ms`, or when `signal` aborts, whichever comes first. */
  wait(key: string, ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const set = this.waiting.get(key) ?? new Set();
      this.waiting.set(key, set);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0 && this.waiting.get(key) === set) this.waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  notify(key: string): void {
    const set = this.waiting.get(key);
    if (!set) return;
    for (const wake of [...set]) wake();
  }
}
