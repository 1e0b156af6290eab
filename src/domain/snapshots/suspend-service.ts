import { ERRORS } from '../errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { DevboxStore } from '../../store/types.js';
import type { DevboxService } from '../devboxes/devbox-service.js';
import type { Lifecycle } from '../devboxes/lifecycle.js';
import type { Devbox } from '../devboxes/types.js';
import type { SnapshotService } from './snapshot-service.js';
import { SUSPEND_METADATA_KEY, type Snapshot } from './types.js';

/**
 * Suspend and resume. Suspend runs the box's suspend commands, stops every process, turns the writable layer
 * into a disk snapshot (a visible one, named "suspend of <id>" with metadata devboxd_suspend=true; moved, not
 * copied, since nothing runs any more), points the devbox at that snapshot's layers and destroys the rest of
 * the sandbox: no process, memory or cgroup is left. Resume boots a new sandbox on those layers.
 */
export class SuspendService {
  constructor(
    private readonly devboxes: DevboxService,
    private readonly store: DevboxStore,
    private readonly lifecycle: Lifecycle,
    private readonly snapshots: SnapshotService,
    private readonly log: Logger,
    /** Ends what must not be cut by the stop (file writes remove their temporary files); bounded by its owner. */
    private readonly beforeStop: (devboxId: string) => Promise<void> = async () => undefined,
  ) {}

  /** running → suspending at once; the rest continues in the background. */
  async suspend(accountId: string, id: string): Promise<Devbox> {
    const { devbox } = await this.devboxes.requireRunning(accountId, id);
    return this.startSuspend(devbox);
  }

  /** For after_idle with on_idle: suspend. Resolves once the devbox is suspended (or failed). */
  async suspendIdle(d: Devbox): Promise<void> {
    const current = await this.store.getById(d.id);
    if (!current || current.status !== 'running' || !this.lifecycle.active.has(d.id)) return;
    if (await this.snapshots.inProgressFor(d.id)) return;
    await this.startSuspend(current);
  }

  private async startSuspend(d: Devbox): Promise<Devbox> {
    const box = this.lifecycle.active.get(d.id);
    if (!box) throw ERRORS.devboxNotRunning(d.id, d.status);
    if (await this.snapshots.inProgressFor(d.id)) throw ERRORS.snapshotInProgress(`devbox ${d.id} has a snapshot in progress; suspend it once that completes`);
    const suspending = await this.lifecycle.transition(d.id, ['running'], 'suspending');
    if (!suspending) {
      const now = await this.store.getById(d.id);
      throw ERRORS.devboxNotRunning(d.id, now?.status ?? 'gone');
    }
    void this.finishSuspend(d.id, box.sandbox).catch((err) => this.log.error({ err, devbox: d.id }, 'suspend failed'));
    return suspending;
  }

  private async finishSuspend(id: string, sandbox: Sandbox): Promise<void> {
    const d = await this.store.getById(id);
    if (!d || d.status !== 'suspending') return;
    await this.runSuspendCommands(d, sandbox);
    await this.beforeStop(id).catch((err) => this.log.warn({ err, devbox: id }, 'ending file writes before suspend failed'));
    const before = await this.store.getById(id);
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
      await this.lifecycle.end(id, { status: 'failure', reason: 'execution_failed' }, `suspend failed: the disk snapshot failed${snap?.errorMessage ? `: ${snap.errorMessage}` : ''}`);
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
      const p = sandbox.spawn({ argv: ['bash', '-c', command], env: d.environment });
      p.stdin.end();
      p.stdout.resume();
      p.stderr.resume();
      const timer = setTimeout(() => p.signal('SIGKILL', true), left);
      const exit = await p.exited.finally(() => clearTimeout(timer));
      if (exit.exitCode !== 0) this.log.warn({ devbox: d.id, command, exit }, 'suspend command failed');
    }
  }

  /** suspended → resuming → running on the same disk; launch commands run again. */
  async resume(accountId: string, id: string): Promise<Devbox> {
    const d = await this.devboxes.get(accountId, id);
    if (d.status !== 'suspended') throw ERRORS.devboxNotSuspended(id, d.status);
    const resuming = await this.lifecycle.transition(id, ['suspended'], 'resuming');
    if (!resuming) {
      const now = await this.devboxes.get(accountId, id);
      throw ERRORS.devboxNotSuspended(id, now.status);
    }
    void this.lifecycle.boot(resuming, { resuming: true }).catch((err) => this.log.error({ err, devbox: id }, 'resume failed'));
    return resuming;
  }

  /**
   * At start, after snapshot reconciliation: a devbox caught suspending is suspended when a suspend snapshot
   * of it completed since it began suspending, else it failed. One caught resuming goes back to suspended:
   * its disk is intact and a resume can start over. Their sandboxes are removed by the supervisor.
   */
  async reconcile(node: string): Promise<void> {
    for (const d of await this.store.listByStatus(['resuming'], node)) {
      await this.lifecycle.transition(d.id, ['resuming'], 'suspended', { why: 'the server restarted while the devbox was resuming; resume it again' });
      this.log.warn({ devbox: d.id }, 'resume interrupted by a restart');
    }
    const done = (await this.snapshots.byStatus(['complete'])).filter((s) => s.metadata[SUSPEND_METADATA_KEY] === 'true');
    for (const d of await this.store.listByStatus(['suspending'], node)) {
      const since = [...d.stateTransitions].reverse().find((t) => t.status === 'suspending')?.transitionTimeMs ?? 0;
      const snap = done.filter((s) => s.sourceDevboxId === d.id && s.createTimeMs >= since).at(-1);
      if (snap) {
        await this.lifecycle.transition(d.id, ['suspending'], 'suspended', { layers: snap.layers });
        this.log.info({ devbox: d.id, snapshot: snap.id }, 'suspend finished after restart');
      } else {
        await this.lifecycle.transition(d.id, ['suspending'], 'failure', {
          why: 'the server stopped while the devbox was suspending',
          failureReason: 'execution_failed',
        });
      }
    }
  }
}
