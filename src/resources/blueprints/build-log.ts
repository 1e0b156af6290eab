import type { Logger } from '../../lib/logger.js';
import type { BuildLog } from './build-engine.js';
import type { SqlBlueprintStore } from './sql-blueprint-store.js';
import type { BuildLogLine } from './types.js';

/** Lines one build keeps; past it only the build's own lines (steps, the outcome) are kept. */
export const LOG_LINES_MAX = 10_000;
const FLUSH_MS = 200;
const BATCH = 200;

/**
 * A build's log: lines are written to the store in small batches as they come (a reader of `…/logs` sees
 * them within a fraction of a second), in order, bounded in count. Output lines past the bound are counted
 * and said once; the build's own step lines still go in.
 */
export class BuildLogWriter implements BuildLog {
  private pending: BuildLogLine[] = [];
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private count = 0;
  private dropped = 0;

  constructor(
    private readonly store: SqlBlueprintStore,
    private readonly blueprintId: string,
    private seq: number,
    private readonly log: Logger,
  ) {}

  info(message: string): void {
    this.add('info', message, false);
  }

  error(message: string): void {
    this.add('error', message, false);
  }

  /** A line of the builder itself (a step, the outcome): kept past the bound. */
  builder(level: BuildLogLine['level'], message: string): void {
    this.add(level, message, true);
  }

  private add(level: BuildLogLine['level'], message: string, own: boolean): void {
    if (!own && this.count >= LOG_LINES_MAX) {
      if (this.dropped++ === 0) this.push('info', `[devboxd: the log is over ${LOG_LINES_MAX} lines; further output of this build is not kept]`);
      return;
    }
    this.push(level, message.replaceAll('\u0000', ''));
  }

  private push(level: BuildLogLine['level'], message: string): void {
    this.count++;
    this.pending.push({ level, message, timestampMs: Date.now() });
    if (this.pending.length >= BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what waits; resolves once every line so far is stored. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const lines = this.pending;
    this.pending = [];
    const first = this.seq + 1;
    this.seq += lines.length;
    this.chain = this.chain
      .then(() => this.store.appendLogs(this.blueprintId, first, lines))
      .catch((err) => this.log.error({ err, blueprint: this.blueprintId }, 'build log write failed'));
    return this.chain;
  }
}
