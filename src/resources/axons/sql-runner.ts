import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ERRORS } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { SqlJob, SqlJobReply, SqlStepOutcome } from './sql-types.js';

export interface SqlLimits {
  /** Processes running statements at once. */
  processes: number;
  /** Jobs waiting for a process; beyond, a 429. */
  queue: number;
  timeoutMs: number;
  maxRows: number;
  maxBytes: number;
  maxDbBytes: number;
}

interface Pending {
  job: SqlJob;
  resolve: (r: SqlStepOutcome[]) => void;
  reject: (e: Error) => void;
}

interface Worker {
  proc: ChildProcess;
  current: Pending | null;
  timer: NodeJS.Timeout | null;
}

const CHILD = fileURLToPath(new URL('./sql-child.ts', import.meta.url));
/** The SQL process's own heap (SQLite's memory is outside it, bounded by its page cache and temp store). */
const CHILD_HEAP_MB = 256;

/**
 * Runs axon SQL in a small pool of child processes: a statement past its time limit is stopped by killing
 * its process (a fresh one takes its place), which better-sqlite3 on the server's thread could not do.
 * Waiting jobs are bounded; the result's rows and bytes are bounded in the child.
 */
export class SqlRunner {
  private readonly idle: Worker[] = [];
  private readonly workers = new Set<Worker>();
  private readonly waiting: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly limits: SqlLimits,
    private readonly log: Logger,
  ) {}

  run(file: string, statements: SqlJob['statements'], batch: boolean): Promise<SqlStepOutcome[]> {
    if (this.closed) return Promise.reject(ERRORS.unavailable('the server is stopping'));
    if (this.waiting.length >= this.limits.queue) return Promise.reject(ERRORS.busy(`${this.waiting.length} axon SQL jobs are waiting already`));
    const { maxRows, maxBytes, maxDbBytes, timeoutMs } = this.limits;
    const job: SqlJob = { id: this.nextId++, file, statements, batch, maxRows, maxBytes, maxDbBytes, timeoutMs };
    return new Promise((resolve, reject) => {
      this.waiting.push({ job, resolve, reject });
      this.dispatch();
    });
  }

  close(): void {
    this.closed = true;
    for (const p of this.waiting.splice(0)) p.reject(ERRORS.unavailable('the server is stopping'));
    for (const w of this.workers) w.proc.kill('SIGKILL');
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      const w = this.idle.pop() ?? (this.workers.size < this.limits.processes ? this.spawn() : undefined);
      if (!w) return;
      const p = this.waiting.shift()!;
      w.current = p;
      w.timer = setTimeout(() => this.timedOut(w), this.limits.timeoutMs);
      w.proc.send(p.job);
    }
  }

  private spawn(): Worker {
    // tsx by its resolved path (the server may run from any directory); none of the server's environment
    // (its keys) reaches the process that runs tenants' SQL.
    const proc = fork(CHILD, [], {
      execArgv: ['--import', import.meta.resolve('tsx'), `--max-old-space-size=${CHILD_HEAP_MB}`],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const w: Worker = { proc, current: null, timer: null };
    proc.stderr?.on('data', (b: Buffer) => this.log.warn({ stderr: b.toString().slice(0, 500) }, 'axon SQL process'));
    proc.on('message', (reply: SqlJobReply) => {
      const p = w.current;
      if (!p || p.job.id !== reply.id) return;
      this.settle(w);
      if ('failure' in reply) p.reject(ERRORS.invalid(reply.failure));
      else p.resolve(reply.results);
      this.idle.push(w);
      this.dispatch();
    });
    proc.on('exit', () => {
      this.workers.delete(w);
      const i = this.idle.indexOf(w);
      if (i >= 0) this.idle.splice(i, 1);
      const p = w.current;
      this.settle(w);
      p?.reject(ERRORS.internal('the SQL process stopped while running the statement'));
      if (!this.closed) this.dispatch();
    });
    this.workers.add(w);
    return w;
  }

  private settle(w: Worker): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    w.current = null;
  }

  private timedOut(w: Worker): void {
    const p = w.current;
    this.settle(w);
    this.workers.delete(w);
    w.proc.kill('SIGKILL');
    // The transaction it was in is rolled back by SQLite's journal when the file is next opened.
    p?.reject(ERRORS.invalid(`the SQL ran longer than ${this.limits.timeoutMs} ms and was stopped`));
    this.dispatch();
  }
}
