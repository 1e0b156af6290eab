import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ERRORS } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import { FairQueue } from './sql-fair-queue.js';
import { createSqlFile, prepareSqlDir, removeSqlFiles, spawnSqlProcess } from './sql-process.js';
import { prepareSqlRuntime, probeSqlRuntime, sqlRuntimeDir } from './sql-runtime.js';
import type { SqlJob, SqlJobReply, SqlStepOutcome } from './sql-types.js';

export interface SqlLimits {
  /** Processes running statements at once. */
  processes: number;
  /** Jobs waiting for a process, all accounts together; beyond, a 429. */
  queue: number;
  /** Jobs of one account running at once, and waiting; beyond, a 429. */
  accountRunning: number;
  accountWaiting: number;
  timeoutMs: number;
  maxRows: number;
  maxBytes: number;
  maxDbBytes: number;
}

interface Pending {
  axonId: string;
  accountId: string;
  job: SqlJob;
  resolve: (r: SqlStepOutcome[]) => void;
  reject: (e: Error) => void;
}

interface Worker {
  slot: number;
  proc: ChildProcess;
  ready: boolean;
  current: Pending | null;
  timer: NodeJS.Timeout | null;
  /** The end of its stderr: why it died. */
  stderr: string;
  /** Killed (its statement ran too long); it takes no job while it dies. */
  killed: boolean;
  /** Its end was handled ('exit', or 'error' when it could not be started). */
  gone: boolean;
}

/** The SQL process's own heap (SQLite's memory is outside it, bounded by its page cache and temp store). */
const CHILD_HEAP_MB = 256;
/** Processes dying before they are ready, in a row, after which the waiting jobs fail (until the next job). */
const START_ATTEMPTS = 3;

/**
 * Runs axon SQL in a small pool of child processes, started ahead of need: a statement past its time limit
 * (counted from when a ready process gets it) is stopped by killing its process, and a fresh one takes its
 * place. Waiting jobs are bounded per account and in all, and served round-robin by account; the result's
 * rows and bytes are bounded in the child.
 */
export class SqlRunner {
  private readonly workers: (Worker | undefined)[] = [];
  private readonly queue: FairQueue<Pending>;
  private nextId = 1;
  private started = false;
  private startFailures = 0;
  private closed = false;
  /** The processes' script and addon (sql-runtime.ts), beside the axons directory in the data directory. */
  private readonly runtime: string;
  private probe: ChildProcess | undefined;

  constructor(
    private readonly limits: SqlLimits,
    private readonly dir: string,
    private readonly log: Logger,
  ) {
    prepareSqlDir(dir);
    this.runtime = sqlRuntimeDir(path.dirname(dir));
    this.queue = new FairQueue({ perAccountRunning: limits.accountRunning, perAccountWaiting: limits.accountWaiting, totalWaiting: limits.queue });
    this.checkStart();
  }

  /**
   * At start, not at the first query: the runtime directory is made current, and a probe with the processes'
   * identity (their own as root, else this server's) checks they can use it and the axons directory as their bind mounts show them. A problem is logged naming the path and the
   * identity; the server runs on, and axon SQL answers 503 until it is fixed.
   */
  private checkStart(): void {
    const started = performance.now();
    try {
      const written = prepareSqlRuntime(this.runtime);
      this.log.debug({ path: this.runtime, written, ms: performance.now() - started }, 'axon SQL runtime directory ready');
    } catch (err) {
      this.log.error({ err, path: this.runtime }, `axon SQL processes cannot start: their runtime directory ${this.runtime} could not be prepared`);
      return;
    }
    const probed = performance.now();
    const { proc, problem } = probeSqlRuntime(this.dir, this.runtime);
    this.probe = proc;
    void problem.then((p) => {
      this.probe = undefined;
      if (p && !this.closed) this.log.error({ path: p.path, uid: p.uid, gid: p.gid }, `axon SQL processes cannot start: ${p.message}`);
      else if (!p) this.log.debug({ ms: performance.now() - probed }, 'axon SQL processes can use their runtime directory');
    });
  }

  /** Makes the axon's database file if it has none yet (the processes never create one). */
  createDatabase(axonId: string): void {
    createSqlFile(this.file(axonId));
  }

  removeDatabase(axonId: string): void {
    removeSqlFiles(this.file(axonId));
  }

  run(accountId: string, axonId: string, statements: SqlJob['statements'], batch: boolean): Promise<SqlStepOutcome[]> {
    if (this.closed) return Promise.reject(ERRORS.unavailable('the server is stopping'));
    const { maxRows, maxBytes, maxDbBytes, timeoutMs } = this.limits;
    const job: SqlJob = { id: this.nextId++, file: `${axonId}.sqlite`, statements, batch, maxRows, maxBytes, maxDbBytes, timeoutMs };
    return new Promise((resolve, reject) => {
      const refused = this.queue.admit(accountId, { axonId, accountId, job, resolve, reject });
      if (refused) return reject(ERRORS.busy(refused));
      this.warm();
      this.dispatch();
    });
  }

  /** The pids of the processes (a test looks at their ids). */
  pids(): number[] {
    return this.workers.flatMap((w) => (w?.proc.pid ? [w.proc.pid] : []));
  }

  close(): void {
    this.closed = true;
    this.probe?.kill('SIGKILL');
    for (const p of this.queue.drain()) p.reject(ERRORS.unavailable('the server is stopping'));
    for (const w of this.workers) w?.proc.kill('SIGKILL');
  }

  private file(axonId: string): string {
    return path.join(this.dir, `${axonId}.sqlite`);
  }

  /** The processes are started at the first job, and each one again as soon as it ends. */
  private warm(): void {
    if (this.started) return;
    this.started = true;
    for (let slot = 0; slot < this.limits.processes; slot++) this.spawn(slot);
  }

  private dispatch(): void {
    for (const w of this.workers) {
      if (!w?.ready || w.current || w.killed) continue;
      const next = this.queue.next();
      if (!next) return;
      w.current = next.item;
      // The process is ready: the budget is the statement's alone, not its process's start.
      w.timer = setTimeout(() => this.timedOut(w), this.limits.timeoutMs);
      w.proc.send(next.item.job);
    }
  }

  private spawn(slot: number): void {
    const proc = spawnSqlProcess(this.dir, this.runtime, slot, CHILD_HEAP_MB);
    const w: Worker = { slot, proc, ready: false, current: null, timer: null, stderr: '', killed: false, gone: false };
    this.workers[slot] = w;
    proc.stderr?.on('data', (b: Buffer) => {
      w.stderr = (w.stderr + b.toString()).slice(-4096);
      this.log.warn({ stderr: b.toString().slice(0, 500) }, 'axon SQL process');
    });
    proc.on('message', (reply: SqlJobReply) => this.onReply(w, reply));
    proc.on('error', (err) => {
      this.log.warn({ err }, 'axon SQL process');
      // Not started at all (no 'exit' follows, e.g. unshare missing): as if it died before it was ready.
      if (proc.pid === undefined) this.onExit(w);
    });
    proc.on('exit', () => this.onExit(w));
  }

  private onReply(w: Worker, reply: SqlJobReply): void {
    if ('ready' in reply) {
      w.ready = true;
      this.startFailures = 0;
      return this.dispatch();
    }
    const p = w.current;
    if (!p || p.job.id !== reply.id) return;
    this.settle(w, p);
    if ('results' in reply) p.resolve(reply.results);
    else if (!fs.existsSync(this.file(p.axonId))) p.reject(ERRORS.notFound('axon', p.axonId));
    else p.reject(ERRORS.invalid(reply.failure));
    this.dispatch();
  }

  private onExit(w: Worker): void {
    if (w.gone) return;
    w.gone = true;
    // A process killed after its slot was given a new one (the start failures below) leaves the slot alone.
    const inSlot = this.workers[w.slot] === w;
    if (inSlot) this.workers[w.slot] = undefined;
    const p = w.current;
    if (p) {
      this.settle(w, p);
      // V8 stops a process whose heap is full: a value too large to bring into JavaScript at all.
      if (/heap out of memory|Reached heap limit/.test(w.stderr)) {
        p.reject(
          ERRORS.tooLarge(
            `the statement's values needed more memory than an axon's SQL process has (${CHILD_HEAP_MB} MiB); select smaller values, e.g. with substr()`,
          ),
        );
      } else p.reject(ERRORS.internal('the SQL process stopped while running the statement'));
    }
    if (this.closed || !inSlot) return;
    if (!w.ready && !w.killed && ++this.startFailures >= START_ATTEMPTS) {
      // Not a statement's fault: the waiting jobs fail now; the next job tries again.
      this.log.error({ stderr: w.stderr.slice(-1000) }, 'axon SQL processes do not start');
      for (const q of this.queue.drain()) q.reject(ERRORS.unavailable('the axon SQL process does not start; see the server log'));
      for (const other of this.workers) other?.proc.kill('SIGKILL');
      this.started = false;
      this.startFailures = 0;
      return;
    }
    if (this.started) this.spawn(w.slot);
    this.dispatch();
  }

  private settle(w: Worker, p: Pending): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    w.current = null;
    this.queue.done(p.accountId);
    // An axon deleted while its job ran: a journal the job left (its file is gone) would stay forever.
    if (!fs.existsSync(this.file(p.axonId))) this.removeDatabase(p.axonId);
  }

  private timedOut(w: Worker): void {
    const p = w.current;
    if (!p) return;
    this.settle(w, p);
    w.killed = true;
    w.proc.kill('SIGKILL');
    // The transaction it was in is rolled back by SQLite's journal when the file is next opened.
    p.reject(ERRORS.invalid(`the SQL ran longer than ${this.limits.timeoutMs} ms and was stopped`));
  }
}
