import { DomainError, ERRORS } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { Store } from '../../platform/store/types.js';
import type { DevboxService } from '../devboxes/index.js';
import type { Lifecycle } from '../devboxes/index.js';
import type { JobRunner } from '../../platform/jobs/job-runner.js';
import type { Devbox } from '../devboxes/index.js';
import type { SnapshotService } from './snapshot-service.js';
import { SUSPEND_METADATA_KEY, type Snapshot } from './types.js';

/** The durable job that sees a suspend through: it ends suspending even if a restart cuts the suspend. */
export const SUSPEND_JOB = 'devbox.suspend';
/** The durable job that sees a resume through: a restart that cuts it boots the box again at start. */
export const RESUME_JOB = 'devbox.resume';

/**
 * Suspend and resume. Suspend runs the box's suspend commands, stops every process, turns the writable layer
 * into a disk snapshot (a visible one, named "suspend of <id>" with metadata devboxd_suspend=true; moved, not
 * copied, since nothing runs any more), points the devbox at that snapshot's layers and destroys the rest of
 * the sandbox: no process, memory or cgroup is left. Resume boots a new sandbox on those layers.
 */
export class SuspendService {
  /** Suspends this process runs, by devbox id. */
  private readonly running = new Map<string, Promise<void>>();
  /** Resume boots this process runs, by devbox id. */
  private readonly resuming = new Map<string, Promise<void>>();

  constructor(
    private readonly devboxes: DevboxService,
    /** The whole store: a resume records its job in the transaction of its transition. */
    private readonly db: Store,
    private readonly lifecycle: Lifecycle,
    private readonly snapshots: SnapshotService,
    private readonly log: Logger,
    /** Records each suspend and resume as a durable job (SUSPEND_JOB, RESUME_JOB; see `settleSuspend`, `settleResume`). */
    private readonly jobs: JobRunner,
    /** Ends what must not be cut by the stop (file writes remove their temporary files); bounded by its owner. */
    private readonly beforeStop: (devboxId: string) => Promise<void> = async () => undefined,
    /**
     * Throws when the box does not resume here: a refusal (this server is draining), or, when `placing`,
     * ElsewhereError for the node it resumes on (the request is forwarded there).
     */
    private readonly mayResume: (d: Devbox, placing: boolean) => Promise<void> = async () => undefined,
    /**
     * This node, and the first of `layers` it cannot make local (not here, not in the blob store): a box
     * from another node resumes here only on its own disk.
     */
    private readonly here: { node: string; missingLayer(layers: readonly string[]): Promise<string | undefined> } = {
      node: '',
      missingLayer: async () => undefined,
    },
  ) {}

  private store() {
    return this.db.devboxes;
  }

  /** running → suspending at once; the rest continues in the background. */
  async suspend(accountId: string, id: string): Promise<Devbox> {
    const { devbox } = await this.devboxes.requireRunning(accountId, id);
    return this.startSuspend(devbox);
  }

  /** For after_idle with on_idle: suspend. Resolves once the devbox is suspended (or failed). */
  async suspendIdle(d: Devbox): Promise<void> {
    const current = await this.store().getById(d.id);
    if (!current || current.status !== 'running' || !this.lifecycle.active.has(d.id)) return;
    if (await this.snapshots.inProgressFor(d.id)) return;
    await this.startSuspend(current);
  }

  private async startSuspend(d: Devbox): Promise<Devbox> {
    const box = this.lifecycle.active.get(d.id);
    if (!box) throw ERRORS.devboxNotRunning(d.id, d.status);
    if (await this.snapshots.inProgressFor(d.id)) throw ERRORS.snapshotInProgress(`devbox ${d.id} has a snapshot in progress; suspend it once that completes`);
    const notRunning = async () => {
      const now = await this.store().getById(d.id);
      return ERRORS.devboxNotRunning(d.id, now?.status ?? 'gone');
    };
    // The job is recorded first: a crash right after the transition still finds the job to end suspending.
    // A second suspend racing this one meets the open job (a conflict) and answers as a lost transition.
    const job = await this.jobs.add(SUSPEND_JOB, d.id).catch(async (err) => {
      throw err instanceof DomainError && err.code === 'conflict' ? await notRunning() : err;
    });
    const suspending = await this.lifecycle.transition(d.id, ['running'], 'suspending');
    if (!suspending) {
      await this.jobs.drop(job).catch(() => undefined);
      throw await notRunning();
    }
    const p = this.finishSuspend(d.id, box.sandbox)
      .catch((err) => this.log.error({ err, devbox: d.id }, 'suspend failed'))
      .finally(() => this.running.delete(d.id));
    this.running.set(d.id, p);
    this.jobs.start(job);
    return suspending;
  }

  private async finishSuspend(id: string, sandbox: Sandbox): Promise<void> {
    const d = await this.store().getById(id);
    if (!d || d.status !== 'suspending') return;
    await this.runSuspendCommands(d, sandbox);
    await this.beforeStop(id).catch((err) => this.log.warn({ err, devbox: id }, 'ending file writes before suspend failed'));
    const before = await this.store().getById(id);
    if (!before || before.status !== 'suspending' || this.lifecycle.detach(id) !== sandbox) return;
    let snap: Snapshot | null;
    try {
      const started = await this.snapshots.begin(before, sandbox, { name: `suspend of ${id}`, metadata: { [SUSPEND_METADATA_KEY]: 'true' } }, { stop: true });
      snap = await this.snapshots.settle(started.id, 24 * 3600_000);
    } catch (err) {
      snap = null;
      this.log.error({ err, devbox: id }, 'suspend snapshot could not start');
    }
    await sandbox.destroy().catch((err) => this.log.error({ err, devbox: id }, 'sandbox release failed'));
    if (!snap || snap.status !== 'complete') {
      await this.lifecycle.end(
        id,
        { status: 'failure', reason: 'execution_failed' },
        `suspend failed: the disk snapshot failed${snap?.errorMessage ? `: ${snap.errorMessage}` : ''}`,
      );
      return;
    }
    // Layers and status in one step: a crash before it finds the devbox suspending with its disk saved (see reconcile).
    if (await this.lifecycle.transition(id, ['suspending'], 'suspended', { layers: snap.layers })) {
      this.log.info({ devbox: id, snapshot: snap.id }, 'devbox suspended');
    }
  }

  /** Runs `lifecycle_hooks.suspend_commands` in order within `suspend_deadline_ms` overall; failures are logged only. */
  private async runSuspendCommands(d: Devbox, sandbox: Sandbox): Promise<void> {
    const { suspendCommands, suspendDeadlineMs } = d.sandbox.launch;
    const deadline = Date.now() + suspendDeadlineMs;
    for (const command of suspendCommands) {
      const left = deadline - Date.now();
      if (left <= 0) {
        this.log.warn({ devbox: d.id }, 'suspend deadline reached before every suspend command ran');
        return;
      }
      // Like every other process of the box, with what providers add (secrets); without them (a secret that
      // does not open) the command does not run, which is logged like a failure: the suspend goes on.
      const env = await this.devboxes
        .environmentOf(d)
        .catch((err: Error) => void this.log.warn({ devbox: d.id, command, reason: err.message }, 'suspend command not run'));
      if (!env) continue;
      const p = sandbox.spawn({ argv: ['bash', '-c', command], env });
      p.stdin.end();
      p.stdout.resume();
      p.stderr.resume();
      const timer = setTimeout(() => p.signal('SIGKILL', true), left);
      const exit = await p.exited.finally(() => clearTimeout(timer));
      if (exit.exitCode !== 0) this.log.warn({ devbox: d.id, command, exit }, 'suspend command failed');
    }
  }

  /**
   * suspended → resuming → running on the same disk; launch commands run again. The resume job is recorded
   * in the transaction of the transition, so a box is never resuming without the job that ends it. With
   * `place`, the box may resume on another node (ElsewhereError). A box of another node resumes here only on
   * its own disk: with a layer of it neither here nor in the blob store it stays suspended (503), else it
   * moves here in the transaction of its transition (its boot fetches what it lacks).
   */
  async resume(accountId: string, id: string, opts: { place?: boolean } = {}): Promise<Devbox> {
    const d = await this.devboxes.get(accountId, id);
    if (d.status !== 'suspended') throw ERRORS.devboxNotSuspended(id, d.status);
    await this.mayResume(d, opts.place === true);
    const from = d.node && d.node !== this.here.node ? d.node : undefined;
    const missing = from && (await this.here.missingLayer(d.layers));
    if (missing) {
      throw ERRORS.unavailable(
        `devbox ${id} cannot resume on node ${this.here.node}: its disk (layer ${missing}) is on node ${from}, neither here nor in the blob store (DEVBOXD_LAYER_BLOBS); it stays suspended, and resumes once node ${from} can take it`,
      );
    }
    const notSuspended = async () => ERRORS.devboxNotSuspended(id, (await this.devboxes.get(accountId, id)).status);
    const started = await this.db
      .transaction(async (tx) => {
        if (from && !(await tx.devboxes.move(id, from, this.here.node))) throw ERRORS.devboxNotSuspended(id, 'no longer suspended on its node');
        const job = await this.jobs.add(RESUME_JOB, id, tx.jobs);
        const resuming = await this.lifecycle.transition(id, ['suspended'], 'resuming', { tx: tx.devboxes });
        // Rolls the job back with the lost transition.
        if (!resuming) throw ERRORS.devboxNotSuspended(id, 'no longer suspended');
        return { job, resuming };
      })
      .catch(async (err) => {
        // A racing resume holds the open job or won the transition.
        throw err instanceof DomainError && (err.code === 'conflict' || err.code === 'devbox_not_suspended') ? await notSuspended() : err;
      });
    this.lifecycle.changed(id);
    const p = this.lifecycle
      .boot(started.resuming, { resuming: true })
      .catch((err) => this.log.error({ err, devbox: id }, 'resume failed'))
      .finally(() => this.resuming.delete(id));
    this.resuming.set(id, p);
    this.jobs.start(started.job);
    return started.resuming;
  }

  /**
   * The resume job: waits for the boot this process runs, or, when none runs here (a restart cut it, or a
   * retry), boots the box again on its layers (the disk a suspend saved is intact) after removing what
   * sandbox is left. Done once the box left resuming: running, or failure with the boot's reason.
   */
  async settleResume(id: string): Promise<void> {
    const here = this.resuming.get(id);
    if (here) await here;
    const d = await this.store().getById(id);
    if (!d || d.status !== 'resuming') return;
    if (!here) {
      this.log.warn({ devbox: id }, 'resume cut short; booting the devbox again');
      await this.lifecycle.discardSandbox(id);
      await this.lifecycle.boot(d, { resuming: true });
    }
    const now = await this.store().getById(id);
    if (now?.status === 'resuming') throw new Error(`devbox ${id} is still resuming after its boot`);
  }

  /** The resume job failed its last attempt: the box fails with the reason rather than stay resuming. */
  async resumeFailed(id: string, error: string): Promise<void> {
    await this.giveUp(id, 'resuming', `resume failed: ${error}`);
  }

  /**
   * The suspend job failed its last attempt: the box fails with the reason rather than stay suspending. Not
   * back to running: by then its processes may be stopped and its writable layer moved into the snapshot.
   */
  async suspendFailed(id: string, error: string): Promise<void> {
    await this.giveUp(id, 'suspending', `suspend failed: ${error}`);
  }

  private async giveUp(id: string, from: 'resuming' | 'suspending', why: string): Promise<void> {
    // Conditional first (a box that moved on is left alone); then the end's clean-up: its sandbox, what
    // runs in it, its output's retention; and a sandbox a previous process left.
    if (await this.lifecycle.transition(id, [from], 'failure', { why, failureReason: 'execution_failed' })) {
      await this.lifecycle.end(id, { status: 'failure', reason: 'execution_failed' }, why);
      await this.lifecycle.discardSandbox(id);
      this.log.error({ devbox: id }, why);
    }
  }

  /**
   * The suspend job: waits for the suspend this process runs, or, when none runs here (a restart cut it),
   * the devbox is suspended if a suspend snapshot of it completed since it began suspending, else it failed.
   * Its sandbox is removed by the supervisor. Idempotent: only a devbox still suspending changes.
   */
  async settleSuspend(id: string): Promise<void> {
    // A suspend run here settles the box itself; if it stopped short (a store write failed on the way),
    // the box is still suspending and is settled below like one a restart cut off.
    await this.running.get(id);
    const d = await this.store().getById(id);
    if (!d || d.status !== 'suspending') return;
    const since = [...d.stateTransitions].reverse().find((t) => t.status === 'suspending')?.transitionTimeMs ?? 0;
    const ofThisSuspend = (s: Snapshot) => s.sourceDevboxId === id && s.metadata[SUSPEND_METADATA_KEY] === 'true' && s.createTimeMs >= since;
    // Its snapshot may still be in progress (its capture job comes later in the queue): settle it first.
    for (const s of (await this.snapshots.byStatus(['in_progress'])).filter(ofThisSuspend)) await this.snapshots.settleCapture(s.id);
    const snap = (await this.snapshots.byStatus(['complete'])).filter(ofThisSuspend).at(-1);
    if (snap) {
      await this.lifecycle.transition(id, ['suspending'], 'suspended', { layers: snap.layers });
      this.log.info({ devbox: id, snapshot: snap.id }, 'suspend finished after restart');
    } else {
      await this.lifecycle.transition(id, ['suspending'], 'failure', {
        why: 'the server stopped while the devbox was suspending',
        failureReason: 'execution_failed',
      });
    }
  }

  /**
   * At start, once the jobs resumed: a devbox caught resuming without a resume job (one from before resumes
   * were jobs) goes back to suspended: its disk is intact and a resume can start over. Its sandbox is
   * removed by the supervisor. (One caught suspending is its suspend job's.)
   */
  async reconcile(node: string): Promise<void> {
    const open = new Set((await this.db.jobs.listOpen(node)).filter((j) => j.kind === RESUME_JOB).map((j) => j.subjectId));
    for (const d of await this.store().listByStatus(['resuming'], node)) {
      if (open.has(d.id)) continue;
      await this.lifecycle.transition(d.id, ['resuming'], 'suspended', { why: 'the server restarted while the devbox was resuming; resume it again' });
      this.log.warn({ devbox: d.id }, 'resume interrupted by a restart');
    }
  }
}
