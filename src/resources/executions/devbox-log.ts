import { EventEmitter } from 'node:events';
import type { Logger } from '../../lib/logger.js';
import type { LogStore } from './execution-store.js';
import type { LogEntry, LogEntryInput, LogFilter } from './types.js';

/** A record stored in the same transaction as a batch of the log (`save` appends the batch too). */
export interface WithRecord {
  save(batch: LogEntryInput[]): Promise<void>;
  /** Fields for the error line when it fails. */
  about: Record<string, unknown>;
}

const matches = (e: LogEntry, f: LogFilter): boolean => (!f.executionId || e.cmdId === f.executionId) && (!f.shellName || e.shellName === f.shellName);

/** Output lines are batched into the log at most this often (one transaction per batch). */
const FLUSH_MS = 50;

/**
 * The devbox log: execution starts and exits, and the first lines of their output. Start and exit entries
 * are written at once; output lines are batched. Every write wakes the tails of that devbox.
 */
export class DevboxLog {
  private pending: LogEntryInput[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Appends run one after another, so entries land in the order they were written. */
  private writing: Promise<void> = Promise.resolve();
  private readonly appended = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly store: LogStore,
    private readonly log: Logger,
  ) {}

  /** Writes the entry now (after any batched lines, so the order holds). */
  write(entry: LogEntryInput): void {
    this.pending.push(storable(entry));
    void this.flush();
  }

  /**
   * Writes the entry (if any) now, as `write`, with a record that must land with it: `record.save` stores the
   * batch and the record in one transaction (an execution's start or exit: one commit, not two). Resolves once
   * both are stored, or the failure is logged.
   */
  writeWith(entry: LogEntryInput | null, record: WithRecord): Promise<void> {
    if (entry) this.pending.push(storable(entry));
    return this.flush(record);
  }

  /** Queues an output line; it lands within FLUSH_MS. */
  line(entry: LogEntryInput): void {
    this.pending.push(storable(entry));
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is pending; resolves once every entry written so far is stored. */
  flush(record?: WithRecord): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (!batch.length && !record) return this.writing;
    this.writing = this.writing.then(async () => {
      try {
        await (record ? record.save(batch) : this.store.append(batch));
      } catch (err) {
        this.log.error({ err, ...record?.about }, record ? 'devbox log write (with a record) failed' : 'devbox log write failed');
        return;
      }
      for (const id of new Set(batch.map((e) => e.devboxId))) this.appended.emit(id);
    });
    return this.writing;
  }

  list(devboxId: string, filter: LogFilter): Promise<LogEntry[]> {
    return this.store.list(devboxId, filter);
  }

  /**
   * Entries of a devbox as they come: everything logged so far, then new ones, until `isOver()` (checked
   * after each catch-up and at least every second) or the signal fires. `filter` (execution id, shell name)
   * holds for the backlog and the live entries alike; it is applied here so that each entry is read once
   * however few match (a filtered read would rescan the entries it skipped at every wake).
   */
  async *follow(devboxId: string, filter: LogFilter, isOver: () => Promise<boolean>, signal: AbortSignal): AsyncGenerator<LogEntry> {
    let seq = 0;
    while (!signal.aborted) {
      let woke = false;
      const wake = () => (woke = true);
      this.appended.on(devboxId, wake);
      try {
        const batch = await this.store.list(devboxId, { afterSeq: seq, limit: 1000 });
        for (const e of batch) {
          seq = e.seq;
          if (matches(e, filter)) yield e;
        }
        if (batch.length === 1000 || woke) continue;
        if (await isOver()) return;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(t);
            this.appended.off(devboxId, done);
            signal.removeEventListener('abort', done);
            resolve();
          };
          const t = setTimeout(done, 1000);
          this.appended.on(devboxId, done);
          signal.addEventListener('abort', done);
          if (woke) done();
        });
      } finally {
        this.appended.off(devboxId, wake);
      }
    }
  }
}

/**
 * Command text and output may hold NUL, which PostgreSQL text cannot store: one such line would fail the
 * whole batch (every box's lines of that flush). It is written as the two characters `\0`.
 */
function storable(e: LogEntryInput): LogEntryInput {
  const clean = (v: string | null | undefined) => (v?.includes('\u0000') ? v.replaceAll('\u0000', '\\0') : v);
  if (!e.message?.includes('\u0000') && !e.cmd?.includes('\u0000')) return e;
  return { ...e, message: clean(e.message), cmd: clean(e.cmd) };
}
