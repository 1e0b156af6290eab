import type { Logger } from '../../lib/logger.js';
import { DomainError } from '../../platform/errors.js';
import { type AuditRecord, auditJson } from './audit-record.js';
import type { AuditConfig } from './config.js';
import type { LineSink } from './line-sink.js';
import type { SqlAuditStore } from './sql-audit-store.js';

/** Records written in one transaction at most; a queue this long is written at once rather than on the timer. */
const BATCH = 256;
/** How long a record may wait for others to share its commit (and, at a `kill -9`, what may be lost). */
const FLUSH_MS = 250;
/** After the database could not be reached: the next try. */
const RETRY_MS = 2_000;
/** A warning about dropped records at most this often (each names how many since the last). */
const WARN_EVERY_MS = 10_000;
const PRUNE_FIRST_MS = 60_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Rows one prune statement deletes: short statements, so other writers (and SQLite's one thread) wait little. */
const PRUNE_BATCH = 1_000;
const DAY_MS = 86_400_000;

interface Pending {
  record: AuditRecord;
  /** Written to DEVBOXD_AUDIT_LOG already (a retry of the table's write does not write it twice). */
  shipped: boolean;
}

/** Counts since start, which /metrics shows (`devboxd_audit_*`). */
export interface AuditStats {
  written: number;
  shipped: number;
  /** Records the table never got: the queue was full, or the database refused the row. */
  dropped: { queue_full: number; refused: number };
  /** Lines DEVBOXD_AUDIT_LOG never got: its stream was backed up, or the write failed. */
  unshipped: number;
}

/**
 * The audit trail's writer: requests hand their record to `record`, which never waits; records are written
 * in batches (one commit for many, 250 ms after the first at most) to the `audit_log` table and, as JSON
 * lines, to DEVBOXD_AUDIT_LOG. The queue is bounded (DEVBOXD_AUDIT_QUEUE): when the database cannot keep up or
 * cannot be reached, records past the bound are dropped and counted, and a warning says how many. `close`
 * writes what is queued, so a graceful stop loses nothing; a `kill -9` loses at most the last 250 ms.
 */
export class AuditLog {
  readonly stats: AuditStats = { written: 0, shipped: 0, dropped: { queue_full: 0, refused: 0 }, unshipped: 0 };
  private readonly queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private backoffUntil = 0;
  private closed = false;
  private pruneTimer: NodeJS.Timeout | undefined;
  private unwarned = 0;
  private lastWarnMs = 0;

  constructor(private readonly deps: { store: SqlAuditStore; sink: LineSink | undefined; config: AuditConfig; log: Logger }) {}

  get queued(): number {
    return this.queue.length;
  }

  /** Queues a record for writing; never waits, never throws. */
  record(record: AuditRecord): void {
    if (this.closed) return;
    if (this.queue.length >= this.deps.config.queueMax) {
      this.stats.dropped.queue_full++;
      this.warnDropped('queue_full');
      return;
    }
    this.queue.push({ record, shipped: false });
    if (this.flushing) return;
    if (this.queue.length >= BATCH && Date.now() >= this.backoffUntil) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.flush();
    } else {
      this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
    }
  }

  /** Writes what is queued now (what arrives meanwhile too); resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.queue.length) return;
    this.flushing = this.drain().finally(() => {
      this.flushing = undefined;
      // A record queued between the drain's last look and now found a flush running and set no timer.
      if (this.queue.length && !this.closed) this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
    });
    return this.flushing;
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.slice(0, BATCH);
      await this.ship(batch.filter((p) => !p.shipped));
      try {
        await this.deps.store.insert(batch.map((p) => p.record));
        this.stats.written += batch.length;
      } catch (err) {
        if (err instanceof DomainError && err.code === 'unavailable') {
          // Kept for the next try; meanwhile the bound of the queue is what holds memory.
          this.deps.log.warn({ err, queued: this.queue.length }, 'audit records not written yet: the database is unavailable');
          this.backoffUntil = Date.now() + RETRY_MS;
          if (!this.closed) this.timer = setTimeout(() => void this.flush(), RETRY_MS).unref();
          return;
        }
        await this.oneByOne(batch, err);
      }
      this.queue.splice(0, batch.length);
    }
  }

  /** A batch the database refused: each row alone, so one bad row costs only itself. */
  private async oneByOne(batch: Pending[], err: unknown): Promise<void> {
    this.deps.log.error({ err }, 'an audit batch was refused: writing its records one by one');
    for (const p of batch) {
      try {
        await this.deps.store.insert([p.record]);
        this.stats.written++;
      } catch (e) {
        this.stats.dropped.refused++;
        this.deps.log.error({ err: e, route: p.record.route, status: p.record.status }, 'audit record refused by the database: dropped');
      }
    }
  }

  private async ship(items: Pending[]): Promise<void> {
    const sink = this.deps.sink;
    if (!sink || !items.length) return;
    for (const p of items) p.shipped = true;
    let ok = false;
    try {
      ok = await sink.write(items.map((p) => `${JSON.stringify(auditJson(p.record))}\n`).join(''));
    } catch (err) {
      this.deps.log.error({ err }, 'audit lines not written to DEVBOXD_AUDIT_LOG');
    }
    if (ok) this.stats.shipped += items.length;
    else {
      this.stats.unshipped += items.length;
      this.warnDropped('unshipped');
    }
  }

  private warnDropped(reason: 'queue_full' | 'unshipped'): void {
    this.unwarned++;
    const now = Date.now();
    if (now - this.lastWarnMs < WARN_EVERY_MS) return;
    this.deps.log.warn(
      { reason, dropped: this.unwarned, queueMax: this.deps.config.queueMax },
      reason === 'queue_full'
        ? 'audit records dropped: the queue is full (the database is slow or unreachable; see devboxd_audit_dropped_total)'
        : 'audit lines dropped: DEVBOXD_AUDIT_LOG is backed up or failing (see devboxd_audit_unshipped_total)',
    );
    this.unwarned = 0;
    this.lastWarnMs = now;
  }

  /** Starts the retention prune: a minute after start, then hourly. */
  start(): void {
    if (this.deps.config.retentionDays === 0) return;
    const run = () => void this.prune().catch((err: unknown) => this.deps.log.warn({ err }, 'audit retention prune failed; next try in an hour'));
    this.pruneTimer = setTimeout(() => {
      run();
      this.pruneTimer = setInterval(run, PRUNE_EVERY_MS).unref();
    }, PRUNE_FIRST_MS).unref();
  }

  /**
   * Deletes rows older than the retention, a batch per statement with a turn of the event loop between: on
   * PostgreSQL every API server prunes the shared table, and two at once only find less to delete.
   */
  async prune(nowMs = Date.now()): Promise<number> {
    const days = this.deps.config.retentionDays;
    if (days === 0) return 0;
    let total = 0;
    for (;;) {
      const n = await this.deps.store.prune(nowMs - days * DAY_MS, PRUNE_BATCH);
      total += n;
      if (n < PRUNE_BATCH || this.closed) break;
      await new Promise((r) => setImmediate(r));
    }
    if (total) this.deps.log.info({ rows: total, retentionDays: days }, 'audit rows past their retention pruned');
    return total;
  }

  /** Writes what is queued and stops; records that arrive later are ignored. */
  async close(): Promise<void> {
    clearTimeout(this.pruneTimer);
    clearInterval(this.pruneTimer);
    this.backoffUntil = 0;
    await this.flush();
    this.closed = true;
    clearTimeout(this.timer);
    if (this.queue.length) this.deps.log.error({ lost: this.queue.length }, 'audit records not written at stop: the database is unavailable');
    await this.deps.sink?.close();
  }
}
