import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { JobStore } from '../store/types.js';
import type { Job } from './types.js';

/** The longest delay one setTimeout holds. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Does one kind of job. It must be safe to run again: after a restart cut a run, the job runs anew with no
 * in-process state left, and finishes from what the database and the disk say. Throwing retries the job
 * (with back-off) until its attempts run out.
 */
export type JobHandler = (job: Job) => Promise<void>;

/**
 * A handler with what to do once the job failed its last attempt: its subject must not stay in a state only
 * the job would have left (a box `suspending`, a snapshot `in_progress`). `exhausted` settles it for good; a
 * throw from it is logged, and the job is failed all the same.
 */
export interface JobKind {
  run: JobHandler;
  exhausted(job: Job, error: string): Promise<void>;
}

export interface JobRunnerOptions {
  /** Runs before a job is failed for good. */
  maxAttempts?: number;
  /** Back-off before the second run; doubles per attempt, at most a minute. */
  retryBaseMs?: number;
  /**
   * Kinds whose due jobs need not finish before the server serves (object expiry: thousands may fall due while
   * it was down, and reads refuse an expired object anyway): `resume` runs them afterwards, a few at a time.
   */
  background?: readonly string[];
  /**
   * Kinds that are never given up: they retry, with the back-off (at most a minute apart), until they
   * succeed. For work whose abandonment leaves no state to settle but a leak (object expiry: the bytes of
   * an expired object would stay stored for ever, counted against its account).
   */
  untilDone?: readonly string[];
}

/**
 * The open jobs of a lost node this runner took (`claimLost`), in the transaction that declared the node lost:
 * `moved` are now this node's (kinds that run anywhere), `ended` failed for good. `afterLost` acts on them once
 * that transaction committed.
 */
export interface LostJobs {
  moved: Job[];
  ended: Job[];
  reason: string;
}

/** Background jobs of one kind `resume` runs at once (each kind has its own workers: a kind of long jobs cannot hold back the others). */
const BACKGROUND_CONCURRENCY = 4;

/**
 * Runs durable jobs: a service records a job before the work starts (`add`), starts it once the record
 * it works on exists (`start`), and the runner moves it through pending → running → succeeded/failed in the
 * store. At start, `resume` runs again every unfinished job of this node, so no work is lost to a restart
 * and no service needs its own start-up reconcile for it.
 */
export class JobRunner {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly runs = new Map<string, Promise<void>>();
  private stopped = false;
  private readonly handlers: Partial<Record<string, JobHandler | JobKind>>;
  private readonly background: Set<string>;
  private readonly untilDone: Set<string>;
  private readonly anyNode = new Set<string>();

  constructor(
    private readonly store: JobStore,
    /** DEVBOXD_NODE_NAME: jobs are this node's to run and resume. */
    private readonly node: string,
    /** One handler per kind (more come from `register`, before `resume`). */
    handlers: Readonly<Partial<Record<string, JobHandler | JobKind>>>,
    private readonly log: Logger,
    private readonly opts: JobRunnerOptions = {},
  ) {
    this.handlers = { ...handlers };
    this.background = new Set(opts.background);
    this.untilDone = new Set(opts.untilDone);
  }

  /**
   * The handler of one kind, from the module that owns it (composition registers every module's kinds
   * before `resume`). A kind registered twice is a wiring error: two modules would claim the same jobs.
   * `anyNode`: the job needs nothing of the node that added it (its inputs are in the database and the blob
   * store: a build, an inspection), so when that node is lost another takes it over; other kinds work on a
   * sandbox or a disk of their node and end with it.
   */
  register(kind: string, handler: JobHandler | JobKind, opts: { background?: boolean; untilDone?: boolean; anyNode?: boolean } = {}): void {
    if (this.handlers[kind]) throw new Error(`jobs of kind ${kind} have a handler already`);
    this.handlers[kind] = handler;
    if (opts.background) this.background.add(kind);
    if (opts.untilDone) this.untilDone.add(kind);
    if (opts.anyNode) this.anyNode.add(kind);
  }

  /**
   * The open jobs of `lost` (a node whose lease lapsed), in the caller's transaction `tx`: kinds that run on
   * any node become this node's, the others fail for good with `reason`. Each change is conditional on the
   * job still being open on `lost`, so two servers never both take one. Call `afterLost` once `tx` committed.
   */
  async claimLost(lost: string, reason: string, tx: JobStore): Promise<LostJobs> {
    const now = Date.now();
    const taken: LostJobs = { moved: [], ended: [], reason };
    for (const job of await tx.listOpen(lost)) {
      // Rows from before node names ('') are whichever server opens the database's, not the lost node's.
      if (job.node !== lost) continue;
      if (this.anyNode.has(job.kind)) {
        if (await tx.move(job.id, lost, this.node, now)) taken.moved.push({ ...job, node: this.node, state: 'pending' });
      } else if (await tx.abandon(job.id, lost, reason, now)) taken.ended.push(job);
    }
    return taken;
  }

  /** Runs the moved jobs here and settles the subjects of the ended ones (their kind's `exhausted`). */
  async afterLost(taken: LostJobs): Promise<void> {
    for (const job of taken.moved) this.start(job);
    for (const job of taken.ended) {
      const kind = this.handlers[job.kind];
      if (!kind || typeof kind === 'function') continue;
      await kind.exhausted(job, taken.reason).catch((err) => this.log.error({ err, job: job.id, kind: job.kind }, 'settling the subject of a lost job failed'));
    }
  }

  /**
   * Records a pending job of `kind` on `subjectId` (not started: see `start`). A second open one is a
   * conflict. `tx` records it in the caller's transaction, with the state change the job sees through.
   * `runAfterMs` defers it (an object's expiry): `start` then schedules it for that time.
   */
  async add(kind: string, subjectId: string, tx: JobStore = this.store, opts: { runAfterMs?: number } = {}): Promise<Job> {
    if (!this.handlers[kind]) throw new Error(`no handler for jobs of kind ${kind}`);
    const now = Date.now();
    const runAfterMs = opts.runAfterMs ?? now;
    const job: Job = {
      id: newId('job'),
      kind,
      subjectId,
      state: 'pending',
      attempts: 0,
      lastError: null,
      runAfterMs,
      node: this.node,
      createTimeMs: now,
      updateTimeMs: now,
    };
    await tx.insert(job);
    return job;
  }

  /** Removes a job whose work never started (its subject could not be recorded). */
  drop(job: Job): Promise<void> {
    return this.store.delete(job.id);
  }

  /** Runs the job now (or at its `runAfterMs`), in the background; it settles in the store. */
  start(job: Job): void {
    if (job.runAfterMs > Date.now()) this.schedule(job.id, job.runAfterMs);
    else void this.run(job.id);
  }

  /** Resolves once the run of `id` started in this process is over (at once if none is). */
  async settled(id: string): Promise<void> {
    await this.runs.get(id);
  }

  /**
   * At start: this node's jobs a restart cut become pending, and every due job runs again; resolves once
   * those have run (in the order they were added), but for the background kinds, which run after, a few at a
   * time. Jobs waiting out a back-off are scheduled.
   */
  async resume(): Promise<void> {
    const requeued = await this.store.requeueRunning(this.node, Date.now());
    if (requeued) this.log.warn({ jobs: requeued }, 'resuming jobs a restart cut');
    const later = new Map<string, string[]>();
    for (const job of await this.store.listOpen(this.node)) {
      if (job.runAfterMs > Date.now()) this.schedule(job.id, job.runAfterMs);
      else if (this.background.has(job.kind)) later.set(job.kind, [...(later.get(job.kind) ?? []), job.id]);
      else await this.run(job.id);
    }
    for (const queue of later.values()) {
      const worker = async () => {
        for (let id = queue.shift(); id !== undefined && !this.stopped; id = queue.shift()) await this.run(id);
      };
      for (let i = 0; i < Math.min(BACKGROUND_CONCURRENCY, queue.length); i++) void worker();
    }
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private schedule(id: string, atMs: number): void {
    // A timer holds at most ~24.8 days (2^31-1 ms; longer ones fire at once): a later job waits in steps.
    const wait = Math.max(0, atMs - Date.now());
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        if (atMs > Date.now()) this.schedule(id, atMs);
        else void this.run(id);
      },
      Math.min(wait, MAX_TIMER_MS),
    );
    timer.unref();
    this.timers.add(timer);
  }

  private run(id: string): Promise<void> {
    const p = this.runOnce(id)
      .catch((err) => this.log.error({ err, job: id }, 'job bookkeeping failed'))
      .finally(() => this.runs.delete(id));
    this.runs.set(id, p);
    return p;
  }

  private async runOnce(id: string): Promise<void> {
    if (this.stopped) return;
    const job = await this.store.claim(id, this.node, Date.now());
    if (!job) return; // finished, or claimed by another run
    const kind = this.handlers[job.kind];
    const handler = typeof kind === 'function' ? kind : kind?.run;
    try {
      if (!handler) throw new Error(`no handler for jobs of kind ${job.kind}`);
      await handler(job);
      await this.store.settle(id, 'succeeded', null, Date.now());
    } catch (err) {
      const message = (err as Error).message || String(err);
      const max = this.opts.maxAttempts ?? 5;
      if (handler && (job.attempts < max || this.untilDone.has(job.kind))) {
        const at = Date.now() + Math.min(60_000, (this.opts.retryBaseMs ?? 1000) * 2 ** Math.min(job.attempts - 1, 30));
        this.log.warn({ err, job: id, kind: job.kind, attempt: job.attempts }, 'job failed; it runs again');
        if (await this.store.retry(id, at, message, Date.now())) this.schedule(id, at);
      } else {
        this.log.error({ err, job: id, kind: job.kind, attempts: job.attempts }, 'job failed for good');
        if (kind && typeof kind !== 'function') {
          await kind.exhausted(job, message).catch((e) => this.log.error({ err: e, job: id, kind: job.kind }, 'settling the subject of a failed job failed'));
        }
        await this.store.settle(id, 'failed', message, Date.now());
      }
    }
  }
}
