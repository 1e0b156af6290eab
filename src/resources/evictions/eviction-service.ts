import { EventEmitter } from 'node:events';
import type { Logger } from '../../lib/logger.js';
import type { DevboxStore } from '../devboxes/index.js';
import type { Lifecycle } from '../devboxes/index.js';
import type { StatusEvents } from '../devboxes/index.js';
import type { Devbox, DevboxStatus } from '../devboxes/index.js';
import { isPooled } from '../devboxes/index.js';
import { ERRORS } from '../../platform/errors.js';
import type { SqlEvictionStore } from './sql-eviction-store.js';
import type { Eviction, EvictionOutcome, EvictionReason } from './types.js';

/** Suspends run at most this many at a time: each stops a box and moves its disk into a layer. */
const SUSPEND_CONCURRENCY = 4;
/** A suspend that has not settled after this long is reported as such (the box keeps suspending). */
const SUSPEND_SETTLE_MS = 10 * 60_000;
/** A box still booting when a drain starts gets this long to run (then it is evicted) or end. */
const BOOT_SETTLE_MS = 120_000;
const BOOTING: readonly DevboxStatus[] = ['provisioning', 'initializing', 'resuming'];

export interface EvictionServiceDeps {
  store: SqlEvictionStore;
  devboxes: DevboxStore;
  lifecycle: Lifecycle;
  events: StatusEvents;
  /** Suspends a running box (running → suspending at once; the suspend service's `suspendIdle`). */
  suspend: (d: Devbox) => Promise<void>;
  /** DEVBOXD_NODE_NAME: only this server's boxes are its to evict. */
  node: string;
  log: Logger;
  /** Runs as a drain starts (a warm pool ends its boxes: they hold nothing of a tenant's to suspend). */
  beforeDrain?: () => Promise<unknown>;
}

/**
 * Evictions: the server suspends a running box it can no longer keep (the host stops or is drained, memory runs
 * short), keeping its disk so the owner can resume it. Each eviction is recorded as pending with a deadline and
 * announced to the owner's watchers first (the SDK's `onEvict` runs clean-up then), the box is suspended at the
 * deadline, and the record goes once the box stops running.
 */
export class EvictionService {
  /** Live announcements by account id; watchers re-read the pending ones from the store when they connect. */
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  /** Evictions this process runs, by devbox id: a second eviction of a box joins the first. */
  private readonly inFlight = new Map<string, Promise<EvictionOutcome>>();
  /** Drains under way (`devboxd drain`, SIGTERM): while any runs, no box starts on this server. */
  private drains = 0;

  constructor(private readonly deps: EvictionServiceDeps) {}

  /** Calls `fn` with each eviction of the account's boxes scheduled from now on, until the returned function is called. */
  subscribe(accountId: string, fn: (e: Eviction) => void): () => void {
    this.emitter.on(accountId, fn);
    return () => this.emitter.off(accountId, fn);
  }

  /**
   * Throws 503 `unavailable` while a drain runs: a box created or resumed now would be booted only to be
   * suspended, and clients creating boxes would keep a shutdown going. The SDK retries 503s with back-off.
   */
  refuseWhileDraining(what: 'create' | 'resume'): void {
    if (this.drains > 0) throw ERRORS.unavailable(`this server is draining its devboxes (an operator drain or a shutdown): ${what} refused, retry later`);
  }

  /** How many watchers are subscribed, all accounts together (tests check that a watcher that left is gone). */
  watchers(): number {
    return this.emitter.eventNames().reduce((n, e) => n + this.emitter.listenerCount(e), 0);
  }

  /** The account's pending evictions (boxes still running), for a watcher that connects. */
  pending(accountId: string): Promise<Eviction[]> {
    return this.deps.store.pending(accountId);
  }

  /** Whether this process is evicting the box now. */
  evicting(devboxId: string): boolean {
    return this.inFlight.has(devboxId);
  }

  /** The box's processes are gone: its eviction, if any, is no longer pending. */
  stopped(devboxId: string): void {
    void this.deps.store.remove(devboxId).catch((err) => this.deps.log.warn({ err, devbox: devboxId }, 'removing a pending eviction failed'));
  }

  /** At start: evictions a previous process left of boxes that no longer run, or of this server's boxes (none runs yet). */
  async reconcile(): Promise<void> {
    await this.deps.store.removeStale(this.deps.node);
  }

  /**
   * Evicts one running box: announces it with a deadline `graceMs` away, waits until then (or until the box
   * stops running by itself), suspends it and waits for the suspend to settle.
   */
  evict(d: Devbox, reason: EvictionReason, graceMs: number): Promise<EvictionOutcome> {
    const running = this.inFlight.get(d.id);
    if (running) return running;
    const p = this.run(d, reason, graceMs).finally(() => this.inFlight.delete(d.id));
    this.inFlight.set(d.id, p);
    return p;
  }

  /**
   * Evicts every box this server runs: all are announced at once with one deadline, then suspended a few at a
   * time. Boxes that start running meanwhile (a create or resume during the drain) are evicted in a next round,
   * so the drain ends with nothing of this server running. `report` hears each outcome as it comes.
   */
  async drain(reason: EvictionReason, graceMs: number, report: (o: EvictionOutcome) => void = () => undefined): Promise<EvictionOutcome[]> {
    this.drains++;
    try {
      await this.deps.beforeDrain?.();
      return await this.drainRounds(reason, graceMs, report);
    } finally {
      this.drains--;
    }
  }

  private async drainRounds(reason: EvictionReason, graceMs: number, report: (o: EvictionOutcome) => void): Promise<EvictionOutcome[]> {
    const outcomes: EvictionOutcome[] = [];
    // Each box is evicted once per drain (one its owner resumes after its suspend stays), and waited for once
    // while booting: a drain always ends.
    const tried = new Set<string>();
    const waited = new Set<string>();
    for (;;) {
      // A warm pool's boxes are no tenant's: the pool ends them when its node drains (nothing to suspend).
      const boxes = (await this.deps.devboxes.listByStatus(['running'], this.deps.node)).filter(
        (d) => !tried.has(d.id) && this.deps.lifecycle.active.has(d.id) && !isPooled(d),
      );
      if (boxes.length === 0) {
        const booting = (await this.deps.devboxes.listByStatus(BOOTING, this.deps.node)).filter((d) => !waited.has(d.id) && !tried.has(d.id));
        if (booting.length === 0) return outcomes;
        for (const d of booting) waited.add(d.id);
        await Promise.all(booting.map((d) => this.until(d.id, (s) => !BOOTING.includes(s), BOOT_SETTLE_MS)));
        continue;
      }
      for (const d of boxes) tried.add(d.id);
      this.deps.log.warn({ reason, boxes: boxes.length, graceMs }, 'evicting every devbox of this server');
      const byId = new Map(boxes.map((d) => [d.id, d]));
      const deadlineMs = Date.now() + graceMs;
      // Announced together, so every owner hears of it before the first suspend starts.
      const scheduled = await Promise.all(boxes.map((d) => this.schedule(d, reason, deadlineMs)));
      await limited(scheduled, SUSPEND_CONCURRENCY, async (e) => {
        const o = await this.evict(byId.get(e.devboxId)!, reason, Math.max(0, e.deadlineMs - Date.now()));
        outcomes.push(o);
        report(o);
      });
    }
  }

  private async run(d: Devbox, reason: EvictionReason, graceMs: number): Promise<EvictionOutcome> {
    const e = await this.schedule(d, reason, Date.now() + graceMs);
    const log = this.deps.log.child({ devbox: d.id, reason });
    try {
      let status = await this.until(d.id, (s) => s !== 'running', Math.max(0, e.deadlineMs - Date.now()));
      if (status !== 'running')
        return { devboxId: d.id, status, suspended: status === 'suspended', gone: true, message: `it stopped running before its deadline (${status})` };
      const current = await this.deps.devboxes.getById(d.id);
      if (current) await this.deps.suspend(current);
      status = (await this.deps.devboxes.getById(d.id))?.status ?? 'shutdown';
      if (status === 'running') {
        log.warn('eviction could not suspend the devbox (a snapshot of it is in progress)');
        return { devboxId: d.id, status, suspended: false, message: 'a snapshot of it is in progress' };
      }
      status = await this.until(d.id, (s) => s !== 'suspending', SUSPEND_SETTLE_MS);
      log.warn({ status }, 'devbox evicted');
      return { devboxId: d.id, status, suspended: status === 'suspended', message: status === 'suspended' ? undefined : `the suspend ended in ${status}` };
    } catch (err) {
      log.error({ err }, 'eviction failed');
      return {
        devboxId: d.id,
        status: (await this.deps.devboxes.getById(d.id).catch(() => undefined))?.status ?? 'unknown',
        suspended: false,
        message: (err as Error).message,
      };
    } finally {
      await this.deps.store.remove(d.id).catch(() => undefined);
    }
  }

  /** Records the eviction (or finds the one that stands) and announces a new one to the owner's watchers. */
  private async schedule(d: Devbox, reason: EvictionReason, deadlineMs: number): Promise<Eviction> {
    const { eviction, created } = await this.deps.store.schedule({ devboxId: d.id, accountId: d.accountId, reason, deadlineMs, createTimeMs: Date.now() });
    if (created) this.emitter.emit(d.accountId, eviction);
    return eviction;
  }

  /** Resolves the box's status once `done` holds for it, or after `timeoutMs` (the status then). */
  private until(id: string, done: (s: DevboxStatus) => boolean, timeoutMs: number): Promise<DevboxStatus> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const check = () => {
        this.deps.devboxes.getById(id).then((d) => {
          if (settled) return;
          if (!d || done(d.status)) finish(d?.status ?? 'shutdown');
        }, fail);
      };
      const finish = (s: DevboxStatus) => {
        settled = true;
        clearTimeout(timer);
        unsubscribe();
        resolve(s);
      };
      const fail = (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        unsubscribe();
        reject(err);
      };
      // Subscribed before the first read: a change between the two is not missed.
      const unsubscribe = this.deps.events.subscribe(id, check);
      const timer = setTimeout(() => {
        void this.deps.devboxes.getById(id).then((d) => !settled && finish(d?.status ?? 'shutdown'), fail);
      }, timeoutMs);
      check();
    });
  }
}

/** Runs `fn` over `items` with at most `n` at once. */
async function limited<T>(items: readonly T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}
