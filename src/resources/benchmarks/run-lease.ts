import type { Logger } from '../../lib/logger.js';
import type { SqlBenchmarkRunStore } from './sql-run-store.js';

/** Lapsed runs one sweep claims at most (the next sweep takes the rest). */
const CLAIM_BATCH = 100;

/**
 * The lease of running benchmark runs. A run belongs to the server that started it, which resumes it after a
 * restart; a server that never comes back (scaled down, renamed) would leave its runs `running` for ever,
 * counted against the account's running-run limit. So every server renews the lease of its running runs
 * every third of the lease, and claims (one conditional update each: one server wins) those whose lease
 * lapsed, then drives them like its own. A run claimed while its first server still lives is no harm: any
 * server may pump any run (on PostgreSQL a pass holds the run's row lock). Clocks of servers sharing a
 * database must agree within the lease.
 */
export class RunLeases {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly runs: SqlBenchmarkRunStore,
    private readonly node: string,
    private readonly leaseMs: number,
    /** Drives a run this server just claimed. */
    private readonly adopt: (runId: string) => void,
    private readonly log: Logger,
  ) {}

  /** The deadline a run started now is leased until. */
  until(nowMs = Date.now()): number {
    return nowMs + this.leaseMs;
  }

  /** A first sweep now (runs left by servers gone while this one was down), then one every third of the lease. */
  async start(): Promise<void> {
    await this.tick();
    this.timer ??= setInterval(() => void this.tick(), Math.max(100, Math.floor(this.leaseMs / 3)));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Renews this server's runs, then claims lapsed ones; a tick still going is joined, not doubled. */
  private tick(): Promise<void> {
    this.ticking ??= this.sweep()
      .catch((err) => this.log.warn({ err }, 'benchmark run lease sweep failed; it runs again'))
      .finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    await this.runs.renew(this.node, this.until(now));
    for (const id of await this.runs.lapsed(now, CLAIM_BATCH)) {
      if (!(await this.runs.claim(id, this.node, now, this.until(now)))) continue;
      this.log.warn({ benchmarkRun: id }, 'took over a benchmark run whose server let its lease lapse');
      this.adopt(id);
    }
  }
}
