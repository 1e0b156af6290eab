import type { Logger } from '../../lib/logger.js';
import type { RuntimeDriver, Sandbox, SandboxSpec } from '../../runtime/driver.js';
import type { DevboxStore } from './devbox-store.js';
import type { AgentMount, CodeMount, ObjectMount } from './create-input.js';
import type { BootContext, LifecycleExtensions } from './extensions.js';
import type { StatusEvents } from './status-events.js';
import { DEVBOX_STATUSES, TERMINAL, type Devbox, type DevboxStatus, type FailureReason, type ShutdownReason, type StateTransition } from './types.js';

/** Every status a box can still leave: an end applies from any of them. */
export const ALIVE: readonly DevboxStatus[] = DEVBOX_STATUSES.filter((s) => !TERMINAL.has(s));

/** The statuses in which a box holds a sandbox (and its size) on its node: all but suspended, whose disk is a layer. */
export const ON_NODE: readonly DevboxStatus[] = ALIVE.filter((s) => s !== 'suspended');

export interface ActiveBox {
  sandbox: Sandbox;
  lastActivityMs: number;
  /** Commands in flight: a busy box is never idle. */
  busy: number;
  oomKills: number;
  /** Aborted when the box leaves the running set (ended, detached): a boot step still running stops. */
  left: AbortController;
}

export type EndReason = { status: 'shutdown'; reason: ShutdownReason } | { status: 'failure'; reason: FailureReason };

export interface BootOptions {
  fileMounts?: Record<string, string>;
  objectMounts?: ObjectMount[];
  agentMounts?: AgentMount[];
  codeMounts?: CodeMount[];
  resuming?: boolean;
  /** The box took a pooled box's running sandbox (same id): no sandbox is created. */
  taken?: boolean;
}

export const sandboxSpec = (d: Devbox): SandboxSpec => ({
  id: d.id,
  hostname: d.sandbox.hostname,
  layers: d.layers,
  limits: d.sandbox.limits,
  user: d.sandbox.user,
});

/**
 * Drives a devbox through its states and owns the link between a devbox record and its live sandbox.
 * Every change is written to the store first, then waiters are woken.
 */
export class Lifecycle {
  readonly active = new Map<string, ActiveBox>();
  /** Boots under way (creates, takes, resumes): a warm pool refills only while there are none. */
  booting = 0;

  constructor(
    private readonly store: DevboxStore,
    private readonly runtime: RuntimeDriver,
    private readonly events: StatusEvents,
    private readonly log: Logger,
    /** Boot steps, what starts once running (the entrypoint) and what ends with the box's processes. */
    private readonly ext: LifecycleExtensions,
  ) {}

  /**
   * Moves the box to `status` if it is in one of `from` (a conditional write: a racing change wins or loses
   * whole), then wakes waiters. Terminal states set end_time_ms. Resolves the updated devbox, or undefined
   * when the box was no longer in `from`.
   */
  async transition(
    id: string,
    from: readonly DevboxStatus[],
    status: DevboxStatus,
    opts: {
      why?: string;
      before?: StateTransition[];
      layers?: string[];
      failureReason?: FailureReason;
      shutdownReason?: ShutdownReason;
      /** The caller's transaction: waiters are woken by the caller (`changed`) once it committed. */
      tx?: DevboxStore;
    } = {},
  ): Promise<Devbox | undefined> {
    const now = Date.now();
    const t: StateTransition = opts.why ? { status, transitionTimeMs: now, failureReason: opts.why } : { status, transitionTimeMs: now };
    const d = await (opts.tx ?? this.store).transition(id, {
      from,
      to: status,
      transitions: [...(opts.before ?? []), t],
      endTimeMs: TERMINAL.has(status) ? now : undefined,
      failureReason: opts.failureReason,
      shutdownReason: opts.shutdownReason,
      layers: opts.layers,
    });
    if (d && !opts.tx) this.events.notify(id);
    return d;
  }

  /** Wakes the box's waiters after a transition made in a transaction (see `transition`'s `tx`). */
  changed(id: string): void {
    this.events.notify(id);
  }

  /**
   * A box ended by a transaction of the caller's, whose sandbox is not this process's (its node was lost):
   * waiters wake and the stop listeners run (executions, scenario runs, links), as for any end.
   */
  endedElsewhere(id: string): void {
    this.events.notify(id);
    this.stopped(id, true);
  }

  /**
   * Removes whatever sandbox of the box is left (one this process holds, or one a previous process left),
   * so that a boot can start over: a retried resume.
   */
  async discardSandbox(id: string): Promise<void> {
    const sandbox = this.detach(id);
    if (sandbox) await sandbox.destroy().catch((err) => this.log.warn({ err, devbox: id }, 'sandbox destroy failed'));
    await this.runtime.remove(id).catch(() => undefined);
  }

  /** Fresh (re)read: the record other requests may have changed while we awaited. */
  private current(id: string): Promise<Devbox | undefined> {
    return this.store.getById(id);
  }

  /**
   * Creates the sandbox (or, `taken`, takes over a pooled box's) and brings the box to `running`: the boot
   * steps in order (file mounts, launch commands; a failing one ends the box in failure/execution_failed),
   * then what starts once running (the entrypoint). Used by create and, with `resuming`, by resume (which
   * goes resuming → running without passing through initializing).
   */
  async boot(d: Devbox, opts: BootOptions = {}): Promise<void> {
    this.booting++;
    try {
      await this.bringUp(d, opts);
    } finally {
      this.booting--;
    }
  }

  private async bringUp(d: Devbox, opts: BootOptions): Promise<void> {
    const sandbox = opts.taken ? await this.takeOver(d.id) : await this.createSandbox(d);
    if (!sandbox) return;
    const still = await this.current(d.id);
    if (!still || TERMINAL.has(still.status)) {
      if (this.active.get(d.id)?.sandbox === sandbox) {
        this.active.delete(d.id);
        await sandbox.destroy();
      }
      return;
    }
    const resuming = opts.resuming ?? false;
    const signal = this.active.get(d.id)?.left.signal ?? AbortSignal.abort();
    const ctx: BootContext = {
      devbox: still,
      sandbox,
      fileMounts: opts.fileMounts ?? {},
      objectMounts: opts.objectMounts ?? [],
      agentMounts: opts.agentMounts ?? [],
      codeMounts: opts.codeMounts ?? [],
      resuming,
      taken: opts.taken ?? false,
      signal,
    };
    const steps = this.ext.bootSteps.filter((s) => s.applies(ctx));
    const initializing = steps.some((s) => !s.quiet);
    if (initializing && !resuming) await this.transition(d.id, ['provisioning'], 'initializing');
    for (let i = 0; i < steps.length; ) {
      let n = 1;
      if (steps[i]!.alongside) while (steps[i + n]?.alongside) n++;
      const failed = (await Promise.allSettled(steps.slice(i, i + n).map((s) => s.run(ctx)))).find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        await this.end(d.id, { status: 'failure', reason: 'execution_failed' }, (failed.reason as Error).message);
        return;
      }
      i += n;
    }
    if (this.active.get(d.id)?.sandbox !== sandbox) return;
    // A box with nothing to initialize still records initializing, in the same write as running.
    const before: StateTransition[] = !initializing && !resuming ? [{ status: 'initializing', transitionTimeMs: Date.now() }] : [];
    const now = await this.transition(d.id, resuming ? ['resuming'] : ['provisioning', 'initializing'], 'running', { before });
    if (!now) return;
    for (const step of this.ext.onRunning) step(now, sandbox, () => void this.end(d.id, { status: 'shutdown', reason: 'entrypoint_exit' }));
  }

  /**
   * A new sandbox for the box, attached (before the caller's re-read: an end that runs from then on finds the
   * sandbox and destroys it itself; one that ran before shows in the re-read, and the sandbox is the caller's
   * to destroy). Undefined when it could not be made: the box has ended in failure.
   */
  private async createSandbox(d: Devbox): Promise<Sandbox | undefined> {
    let sandbox: Sandbox;
    try {
      const parts = await Promise.all(this.ext.beforeCreate.map((ready) => ready(d)));
      sandbox = await this.runtime.create(Object.assign(sandboxSpec(d), ...parts));
    } catch (err) {
      this.log.error({ err, devbox: d.id }, 'sandbox creation failed');
      // Through `end`: what was readied for the sandbox (its box-services socket) goes with the box.
      await this.end(d.id, { status: 'failure', reason: 'health_check_failed' }, `sandbox creation failed: ${(err as Error).message}`);
      return undefined;
    }
    this.attach(d.id, sandbox);
    sandbox.died.then(() => this.onDied(d.id, sandbox)).catch(() => undefined);
    return sandbox;
  }

  /**
   * The running sandbox of a pooled box a create took (its record now the new owner's): its timers start
   * over. Undefined when it is gone (it died between the take and now): the box has ended in failure.
   */
  private async takeOver(id: string): Promise<Sandbox | undefined> {
    const box = this.active.get(id);
    if (!box) {
      await this.end(id, { status: 'failure', reason: 'health_check_failed' }, 'the warm pool box it was given stopped before it could start');
      return undefined;
    }
    box.lastActivityMs = Date.now();
    box.oomKills = 0;
    return box.sandbox;
  }

  attach(id: string, sandbox: Sandbox): void {
    this.active.set(id, { sandbox, lastActivityMs: Date.now(), busy: 0, oomKills: 0, left: new AbortController() });
  }

  /** Ends a devbox for good: its processes and writable layer go; the record stays, terminal. Idempotent. */
  async end(id: string, why: EndReason, message?: string): Promise<Devbox | undefined> {
    const box = this.active.get(id);
    this.active.delete(id);
    box?.left.abort();
    try {
      // Reasons quote command output, which may hold bytes a database cannot store as text (NUL).
      return await this.finish(id, why, message?.replaceAll('\u0000', '\\0'));
    } finally {
      // Even when the record could not be written: the sandbox goes, and so does what the box left behind
      // (execution output), also for a box with no sandbox (suspended).
      this.stopped(id, true);
      if (box) await box.sandbox.destroy().catch((err) => this.log.error({ err, devbox: id }, 'sandbox destroy failed'));
    }
  }

  /**
   * Takes a box out of the running set without destroying it: its executions end, and its init dying is no
   * longer a failure (suspend stops the box itself). The caller destroys the sandbox.
   */
  detach(id: string): Sandbox | undefined {
    const box = this.active.get(id);
    this.active.delete(id);
    if (!box) return undefined;
    box.left.abort();
    this.stopped(id, false);
    return box.sandbox;
  }

  private async finish(id: string, why: EndReason, message?: string): Promise<Devbox | undefined> {
    const d = await this.transition(id, ALIVE, why.status, {
      why: message ?? (why.status === 'failure' ? why.reason : undefined),
      failureReason: why.status === 'failure' ? why.reason : undefined,
      shutdownReason: why.status === 'shutdown' ? why.reason : undefined,
    });
    // Already ended (by a racing end): the record as that one left it.
    return d ?? (await this.current(id));
  }

  private onDied(id: string, sandbox: Sandbox): void {
    if (this.active.get(id)?.sandbox !== sandbox) return;
    this.log.warn({ devbox: id }, 'sandbox init died');
    void this.end(id, { status: 'failure', reason: 'health_check_failed' }, 'the sandbox stopped unexpectedly');
  }

  private stopped(id: string, ended: boolean): void {
    for (const listener of this.ext.onStopped) listener(id, ended);
  }
}
