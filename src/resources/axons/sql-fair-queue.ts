export interface FairLimits {
  /** Jobs of one account running at once. */
  perAccountRunning: number;
  /** Jobs of one account waiting for a process. */
  perAccountWaiting: number;
  /** Jobs waiting, all accounts together. */
  totalWaiting: number;
}

interface Account<T> {
  running: number;
  waiting: T[];
  /** When a job of it last went to a process (a count of dispatches); 0 for never. */
  served: number;
}

/**
 * The axon SQL jobs waiting for a process, served round-robin by account: each account may have a few jobs
 * running and waiting, and the next free process goes to the account served longest ago, so one tenant that
 * keeps its slots full delays another tenant's job by at most the jobs already running.
 */
export class FairQueue<T> {
  /** Accounts with jobs running or waiting. */
  private readonly accounts = new Map<string, Account<T>>();
  private total = 0;
  private dispatched = 0;

  constructor(private readonly limits: FairLimits) {}

  /** Queues the job, or says why it may not wait (the caller answers 429). */
  admit(accountId: string, item: T): string | null {
    const { perAccountRunning, perAccountWaiting, totalWaiting } = this.limits;
    const a = this.accounts.get(accountId) ?? { running: 0, waiting: [], served: 0 };
    const most = perAccountRunning + perAccountWaiting;
    if (a.running + a.waiting.length >= most) {
      return `this account has ${most} axon SQL jobs running or waiting, the most it may (${perAccountRunning} running, ${perAccountWaiting} waiting); retry when one has ended`;
    }
    if (this.total >= totalWaiting) return `${this.total} axon SQL jobs are waiting already; retry shortly`;
    this.accounts.set(accountId, a);
    a.waiting.push(item);
    this.total++;
    return null;
  }

  /**
   * The next job to run (counted as running until `done`): of the accounts with a job waiting and a free
   * slot, the one served longest ago. At most `totalWaiting` accounts have a job waiting.
   */
  next(): { accountId: string; item: T } | undefined {
    let pick: [string, Account<T>] | undefined;
    for (const entry of this.accounts) {
      const a = entry[1];
      if (a.waiting.length === 0 || a.running >= this.limits.perAccountRunning) continue;
      if (!pick || a.served < pick[1].served) pick = entry;
    }
    if (!pick) return undefined;
    const [accountId, a] = pick;
    a.running++;
    a.served = ++this.dispatched;
    this.total--;
    return { accountId, item: a.waiting.shift()! };
  }

  done(accountId: string): void {
    const a = this.accounts.get(accountId);
    if (!a) return;
    a.running--;
    if (a.running === 0 && a.waiting.length === 0) this.accounts.delete(accountId);
  }

  /** Every waiting job, removed (the server is stopping). */
  drain(): T[] {
    const all = [...this.accounts.values()].flatMap((a) => a.waiting.splice(0));
    this.total = 0;
    return all;
  }
}
