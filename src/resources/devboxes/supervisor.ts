import type { Logger } from '../../lib/logger.js';
import type { RuntimeDriver } from '../../runtime/driver.js';
import type { DevboxStore } from './devbox-store.js';
import type { Suspender } from './hooks.js';
import { sandboxSpec, type Lifecycle } from './lifecycle.js';
import { TERMINAL } from './types.js';

const TICK_MS = 1000;
const STATS_EVERY = 2;

/**
 * Background duties over live boxes: keep-alive and idle timers, OOM checks (one timer for all boxes, so a
 * thousand idle boxes cost one interval), and reconciliation at start. The disk quota needs no check: the
 * runtime's kernel refuses writes past it (ENOSPC in the box), and a full box keeps running.
 */
export class Supervisor {
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  private running = false;

  constructor(
    private readonly store: DevboxStore,
    private readonly runtime: RuntimeDriver,
    private readonly lifecycle: Lifecycle,
    private readonly log: Logger,
    /** DEVBOXD_NODE_NAME: reconcile touches only the boxes this server runs (others share the database). */
    private readonly node: string,
    /** Suspends a box idle past after_idle with on_idle: suspend (the suspend service). */
    private readonly suspender: Suspender,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      this.ticks++;
      const now = Date.now();
      for (const [id, box] of [...this.lifecycle.active]) {
        const d = await this.store.getById(id);
        // Ended by another server sharing the database (a shutdown it served): the sandbox here goes too.
        if (d && TERMINAL.has(d.status)) {
          await this.lifecycle.end(id, { status: 'shutdown', reason: 'api_shutdown' });
          continue;
        }
        if (!d || d.status !== 'running') continue;
        const launch = d.sandbox.launch;
        if (launch.keepAliveSeconds && now > d.keepAliveAtMs + launch.keepAliveSeconds * 1000) {
          await this.lifecycle.end(id, { status: 'shutdown', reason: 'keep_alive_timeout' });
          continue;
        }
        if (launch.afterIdle && box.busy === 0 && now > box.lastActivityMs + launch.afterIdle.idleSeconds * 1000) {
          if (launch.afterIdle.onIdle === 'suspend') {
            box.lastActivityMs = now;
            void this.suspender(d).catch((err) => this.log.error({ err, devbox: id }, 'idle suspend failed'));
          } else {
            await this.lifecycle.end(id, { status: 'shutdown', reason: 'idle' });
          }
          continue;
        }
        if (this.ticks % STATS_EVERY === 0) await this.checkResources(id);
      }
    } catch (err) {
      this.log.error({ err }, 'supervisor tick failed');
    } finally {
      this.running = false;
    }
  }

  private async checkResources(id: string): Promise<void> {
    const box = this.lifecycle.active.get(id);
    const d = await this.store.getById(id);
    if (!box || !d) return;
    const stats = await box.sandbox.stats().catch(() => undefined);
    if (!stats) return;
    if (stats.oomKills > box.oomKills) {
      await this.lifecycle.end(
        id,
        { status: 'failure', reason: 'out_of_memory' },
        `a process was killed for exceeding the memory limit of ${d.sandbox.limits.memoryBytes} bytes`,
      );
    }
  }

  /**
   * After a restart: running boxes of this node whose sandbox survived are adopted; its boxes caught
   * mid-transition are ended with a reason; sandboxes the database does not know as running are removed (also
   * those of boxes another server failed while this node was lost: a failed box is never adopted). Boxes of
   * other nodes sharing the database are not this server's to judge: their sandboxes are not here.
   */
  async reconcile(): Promise<void> {
    const known = new Set<string>();
    for (const d of await this.store.listByStatus(['provisioning', 'initializing', 'running', 'resuming'], this.node)) {
      // Booted by a job during this start (a resume a restart cut): already this process's.
      if (this.lifecycle.active.has(d.id)) {
        known.add(d.id);
        continue;
      }
      const sandbox = d.status === 'running' ? await this.runtime.adopt(sandboxSpec(d)).catch(() => null) : null;
      if (sandbox) {
        known.add(d.id);
        this.lifecycle.attach(d.id, sandbox);
        const stats = await sandbox.stats().catch(() => undefined);
        this.lifecycle.active.get(d.id)!.oomKills = stats?.oomKills ?? 0;
        void sandbox.died
          .then(() => this.lifecycle.end(d.id, { status: 'failure', reason: 'health_check_failed' }, 'the sandbox stopped unexpectedly'))
          .catch((err) => this.log.error({ err, devbox: d.id }, 'ending a devbox whose sandbox died failed'));
        this.log.info({ devbox: d.id }, 'adopted running devbox');
      } else {
        await this.runtime.remove(d.id).catch(() => undefined);
        const why = d.status === 'running' ? 'the sandbox was gone after a server restart' : `the server restarted while the devbox was ${d.status}`;
        await this.lifecycle.end(d.id, { status: 'failure', reason: 'health_check_failed' }, why);
      }
    }
    for (const id of await this.runtime.listSandboxes()) {
      if (!known.has(id)) {
        this.log.warn({ sandbox: id }, 'removing a sandbox the database does not know as running');
        await this.runtime.remove(id).catch((err) => this.log.error({ err, sandbox: id }, 'remove failed'));
      }
    }
  }
}
