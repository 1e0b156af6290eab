import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { Devbox } from '../devboxes/index.js';
import type { LogEntryInput } from '../executions/index.js';
import type { EventHub } from './event-hub.js';
import { ADAPTERS, AxonLink, exitText, sleep, type BrokerPublish } from './protocols/index.js';
import type { SqlBrokerStore } from './sql-broker-store.js';
import type { BrokerMount } from './types.js';

/** When an agent that exited is started again, and when the broker gives up on it. */
export interface BrokerTiming {
  /** The first wait before starting it again; it doubles with each quick exit, up to backoffMaxMs. */
  backoffMinMs: number;
  backoffMaxMs: number;
  /** An agent that ran this long before exiting is started again without the accumulated backoff. */
  healthyRunMs: number;
  /** Exits in a row, each before healthyRunMs, after which it is not started again (until the box runs again). */
  quickExitsMax: number;
}

/** 1 s doubling to 30 s; after 5 quick exits (about 15 s of trying) it is given up on. */
export const BROKER_TIMING: BrokerTiming = { backoffMinMs: 1000, backoffMaxMs: 30_000, healthyRunMs: 60_000, quickExitsMax: 5 };

/** Writes an entry to a devbox's log, where the box's user sees what became of its agent. */
export type BoxLog = (entry: LogEntryInput) => void;

/**
 * One broker mount at work in a running box: its protocol's adapter runs the agent binary in the box with
 * its launch args and delivers the axon's events after the last delivered one (see protocols/). What was
 * delivered is recorded, so an agent started again (after it exits, a resume, a server restart) gets what
 * came after. An agent that exits is started again after a backoff (1 s doubling to 30 s; reset after a
 * minute of running); one that exits 5 times in a row within a minute of starting (a missing binary, a crash
 * at start) is left stopped until the box runs again. Each exit is written to the box's log, so its user
 * sees it.
 */
class AgentFeed {
  private readonly stop = new AbortController();
  private readonly link: AxonLink;

  constructor(
    private readonly mount: BrokerMount,
    linkDeps: ConstructorParameters<typeof AxonLink>[2],
    private readonly alive: () => boolean,
    private readonly log: Logger,
    private readonly boxLog: BoxLog,
    private readonly timing: BrokerTiming,
  ) {
    this.link = new AxonLink(mount, this.stop.signal, linkDeps);
    void this.run().catch((err) => log.error({ err, devbox: mount.devboxId }, 'broker mount stopped'));
  }

  close(): void {
    this.stop.abort();
  }

  private async run(): Promise<void> {
    const t = this.timing;
    let backoff = t.backoffMinMs;
    let quickExits = 0;
    const adapter = ADAPTERS[this.mount.protocol]();
    const cmd = [this.mount.agentBinary, ...this.mount.launchArgs].join(' ');
    // A box that stopped without its stop listener reaching this feed (it died) starts nothing more.
    while (!this.stop.signal.aborted && this.alive()) {
      const started = Date.now();
      const outcome = await adapter.run(this.link);
      if (this.stop.signal.aborted || outcome.kind === 'stopped') return;
      const exit = outcome.exit;
      const healthy = Date.now() - started > t.healthyRunMs;
      quickExits = healthy ? 0 : quickExits + 1;
      if (healthy) backoff = t.backoffMinMs;
      const how = exitText(exit);
      const entry = { devboxId: this.mount.devboxId, timestampMs: Date.now(), source: 'entrypoint' as const, cmd, exitCode: exit.exitCode };
      if (quickExits >= t.quickExitsMax) {
        this.log.warn({ devbox: this.mount.devboxId, axon: this.mount.axonId, exit }, 'broker agent keeps exiting at start; not starting it again');
        const message = `broker agent for axon ${this.mount.axonId} exited ${how}, ${quickExits} times in a row within ${t.healthyRunMs / 1000} s of starting: not started again until the box runs again (a resume, a server restart)`;
        this.boxLog({ ...entry, level: 'error', message });
        if (this.mount.protocol !== 'claude_json') await this.link.error(message);
        return;
      }
      this.log.warn({ devbox: this.mount.devboxId, axon: this.mount.axonId, exit }, 'broker agent exited; starting it again');
      this.boxLog({ ...entry, level: 'warn', message: `broker agent for axon ${this.mount.axonId} exited ${how}; starting it again in ${backoff / 1000} s` });
      await sleep(backoff, this.stop.signal);
      backoff = Math.min(backoff * 2, t.backoffMaxMs);
    }
  }
}

/** The broker: the feeds of the running boxes' broker mounts (started when a box runs, stopped when it stops). */
export class Broker {
  private readonly feeds = new Map<string, AgentFeed[]>();

  constructor(
    private readonly store: SqlBrokerStore,
    private readonly hub: EventHub,
    /** Publishes the agents' output to their axons. */
    private readonly publish: BrokerPublish,
    private readonly environmentOf: (d: Devbox) => Promise<Record<string, string>>,
    /** Whether this sandbox is still the box's running one. */
    private readonly running: (id: string, sandbox: Sandbox) => boolean,
    private readonly log: Logger,
    private readonly boxLog: BoxLog,
    private readonly timing: BrokerTiming = BROKER_TIMING,
  ) {}

  /** The lifecycle's running step (also for resumed boxes). */
  readonly onRunning = (d: Devbox, sandbox: Sandbox): void => {
    void this.start(d, sandbox).catch((err) => this.log.error({ err, devbox: d.id }, 'broker start failed'));
  };

  readonly onStopped = (id: string): void => {
    for (const f of this.feeds.get(id) ?? []) f.close();
    this.feeds.delete(id);
  };

  async start(d: Devbox, sandbox: Sandbox): Promise<void> {
    const mounts = await this.store.ofDevbox(d.id);
    if (mounts.length === 0) return;
    const env = await this.environmentOf(d);
    // The box may have stopped while this read: its stop listener found nothing to stop.
    if (!this.running(d.id, sandbox)) return;
    this.onStopped(d.id);
    const alive = () => this.running(d.id, sandbox);
    const deps = {
      accountId: d.accountId,
      sandbox,
      env,
      hub: this.hub,
      store: this.store,
      publish: this.publish,
      log: this.log,
      retryMs: this.timing.backoffMinMs,
    };
    this.feeds.set(
      d.id,
      mounts.map((m) => new AgentFeed(m, deps, alive, this.log, this.boxLog, this.timing)),
    );
  }

  close(): void {
    for (const id of [...this.feeds.keys()]) this.onStopped(id);
  }
}
