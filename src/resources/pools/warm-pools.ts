import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../platform/store/types.js';
import { type BoxMake, DEFAULT_SIZE, type Devbox, type DevboxService, isPooled, type Lifecycle, POOL_ACCOUNT, type PoolTaker } from '../devboxes/index.js';
import type { PoolConfig } from './config.js';
import { SqlPoolStore } from './sql-pool-store.js';

/** How often the settings are read again and the pools topped up (a take tops up at once). */
const TICK_MS = 2_000;
/** How long a refill waits, each time, for the boots under way (tenants' creates and resumes) to end. */
const YIELD_MS = 25;
/**
 * After a take, a refill waits this long for the box's owner to start using it (a create is most often
 * followed by a command at once), unless the pool is down to half its target.
 */
const AFTER_TAKE_MS = 300;
/** How long a pooled box may take to boot before the attempt counts as failed. */
const BOOT_WAIT_MS = 120_000;
/** After a failed refill, the pool waits 1 s, 2 s, 4 s … up to this before it tries again. */
const MAX_BACKOFF_MS = 5 * 60_000;
/** After memory pressure ended a pooled box, no refill for this long. */
const PRESSURE_PAUSE_MS = 60_000;

/** What two boxes must share for one to stand for the other, as one string. */
export const makeKey = (m: BoxMake): string => {
  const { cpuCores, memoryBytes, diskBytes, pids } = m.limits;
  return JSON.stringify([m.layers, cpuCores, memoryBytes, diskBytes, pids, m.user.name, m.user.uid]);
};
const makeOf = (d: Devbox): BoxMake => ({ layers: d.layers, limits: d.sandbox.limits, user: d.sandbox.user });

/** A pool's name: its size, or `<blueprint id>/<size>` for a blueprint's. */
export const poolName = (size: string, blueprintId: string): string => (blueprintId ? `${blueprintId}/${size}` : size);
const poolOf = (d: Devbox) => ({ size: String(d.launchParameters.resource_size_request ?? DEFAULT_SIZE), blueprintId: d.blueprintId ?? '' });

interface Target {
  size: string;
  blueprintId: string;
  count: number;
}

interface Pool {
  size: string;
  blueprintId: string;
  /** The make of its boxes, once one was made (or adopted). */
  key: string | null;
  /** Ready boxes, oldest first. */
  ids: string[];
  failures: number;
  retryAtMs: number;
}

export interface WarmPoolsDeps {
  devboxes: DevboxService;
  lifecycle: Lifecycle;
  store: Store;
  node: string;
  config: PoolConfig;
  /**
   * Whether the host has memory to spare for one more idle box. (Not placement's room: boxes are sized by
   * their limits there, and a host overcommits those; a pooled box holds its share of them like any box.)
   */
  room(): Promise<boolean>;
  draining(): boolean;
  log: Logger;
}

/**
 * This node's warm pools: per size, of the default image or of a public blueprint, boxes booted ahead under no
 * account, handed to the creates that match (`take`, through the devbox service) and made again in the
 * background, one at a time and only while no other box is booting, so a burst of creates never waits behind
 * a refill.
 */
export class WarmPools implements PoolTaker {
  private readonly pools = new Map<string, Pool>();
  private readonly settings: SqlPoolStore;
  private filling = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private pausedUntilMs = 0;
  private lastTakeMs = 0;

  constructor(private readonly deps: WarmPoolsDeps) {
    this.settings = new SqlPoolStore(deps.store.db);
  }

  take(make: BoxMake): string | null {
    const key = makeKey(make);
    for (const p of this.pools.values()) {
      if (p.key !== key) continue;
      const id = p.ids.shift();
      if (!id) continue;
      this.lastTakeMs = Date.now();
      this.kick();
      return id;
    }
    return null;
  }

  /** Taken but not used (its create failed to record it): what the create began with it is unknown, so it goes. */
  returned(id: string): void {
    void this.end(id);
  }

  /** A box stopped: if it was a ready one, it is no longer. */
  stopped(id: string): void {
    for (const p of this.pools.values()) {
      const i = p.ids.indexOf(id);
      if (i >= 0) p.ids.splice(i, 1);
    }
  }

  /** After a restart: this node's pooled boxes that were adopted are ready again. */
  async start(): Promise<void> {
    for (const d of await this.deps.store.devboxes.listByStatus(['running'], this.deps.node)) {
      if (!isPooled(d) || d.node !== this.deps.node || !this.deps.lifecycle.active.has(d.id)) continue;
      const p = this.pool(poolOf(d));
      p.key = makeKey(makeOf(d));
      p.ids.push(d.id);
    }
    this.timer = setInterval(() => this.kick(), TICK_MS);
    this.timer.unref();
    this.kick();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  /** The node drains: its pooled boxes end (there is nothing of a tenant's in them to suspend). */
  async drain(): Promise<void> {
    await Promise.all([...this.pools.values()].flatMap((p) => p.ids.splice(0)).map((id) => this.end(id)));
  }

  /** Memory pressure: the newest box of the fullest pool ends before any tenant's box is evicted. True when one did. */
  async relieve(): Promise<boolean> {
    this.pausedUntilMs = Date.now() + PRESSURE_PAUSE_MS;
    const newest = [...this.pools.values()].filter((p) => p.ids.length).sort((a, b) => b.ids.length - a.ids.length)[0];
    const id = newest?.ids.pop();
    if (!id) return false;
    this.deps.log.warn({ devbox: id }, 'memory pressure: a warm pool box ends first');
    await this.end(id);
    return true;
  }

  private pool(t: { size: string; blueprintId: string }): Pool {
    const name = poolName(t.size, t.blueprintId);
    let p = this.pools.get(name);
    if (!p) this.pools.set(name, (p = { size: t.size, blueprintId: t.blueprintId, key: null, ids: [], failures: 0, retryAtMs: 0 }));
    return p;
  }

  /** Each pool's target: `devboxd pools set` where given, else DEVBOXD_WARM_POOL for the default size and image. */
  private async targets(): Promise<Map<string, Target>> {
    const out = new Map<string, Target>([[DEFAULT_SIZE, { size: DEFAULT_SIZE, blueprintId: '', count: this.deps.config.defaultCount }]]);
    for (const s of await this.settings.list()) out.set(poolName(s.size, s.blueprintId), s);
    return out;
  }

  private kick(): void {
    if (!this.filling && !this.closed) void this.fill();
  }

  private async fill(): Promise<void> {
    this.filling = true;
    try {
      const targets = await this.targets();
      for (const [name, p] of this.pools) {
        const over = p.ids.length - (targets.get(name)?.count ?? 0);
        if (over > 0) await Promise.all(p.ids.splice(p.ids.length - over).map((id) => this.end(id)));
      }
      for (;;) {
        if (this.closed || this.deps.draining() || Date.now() < this.pausedUntilMs) return;
        const t = [...targets.values()].find((x) => this.pool(x).ids.length < x.count && Date.now() >= this.pool(x).retryAtMs);
        if (!t) return;
        // Low priority: a refill starts only while no other box boots (one that arrives meanwhile boots beside it)
        // and, while the pool has half its boxes or more, not right after a take.
        const low = this.pool(t).ids.length < t.count / 2;
        if (this.deps.lifecycle.booting > 0 || (!low && Date.now() - this.lastTakeMs < AFTER_TAKE_MS)) {
          await sleep(YIELD_MS);
          continue;
        }
        if (!(await this.deps.room())) return;
        await this.makeOne(this.pool(t));
      }
    } catch (err) {
      this.deps.log.error({ err }, 'warm pool refill failed');
    } finally {
      this.filling = false;
    }
  }

  private async makeOne(p: Pool): Promise<void> {
    let id: string | undefined;
    try {
      // A blueprint's launch commands run at the take (the create asks for them), not in the pool.
      const d = await this.deps.devboxes.create(
        POOL_ACCOUNT,
        p.blueprintId
          ? { blueprintId: p.blueprintId, launchParameters: { resource_size_request: p.size, launch_commands: [] } }
          : { launchParameters: { resource_size_request: p.size } },
      );
      id = d.id;
      const now = await this.deps.devboxes.waitForStatus(POOL_ACCOUNT, d.id, ['running', 'failure', 'shutdown'], BOOT_WAIT_MS);
      if (now?.status !== 'running') throw new Error(`the box ended ${now?.status ?? 'still booting'}: ${now?.stateTransitions.at(-1)?.failureReason ?? ''}`);
      // A drain that began while it booted has ended the others: this one goes too.
      if (this.deps.draining()) return void (await this.end(d.id));
      p.key = makeKey(makeOf(now));
      p.ids.push(d.id);
      p.failures = 0;
      this.deps.log.debug({ devbox: d.id, pool: poolName(p.size, p.blueprintId), ready: p.ids.length }, 'warm pool box ready');
    } catch (err) {
      if (id) await this.end(id);
      p.failures++;
      p.retryAtMs = Date.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (p.failures - 1));
      this.deps.log.warn({ err, pool: poolName(p.size, p.blueprintId), retryInMs: p.retryAtMs - Date.now() }, 'a warm pool box could not be made');
    }
  }

  private async end(id: string): Promise<void> {
    await this.deps.lifecycle
      .end(id, { status: 'shutdown', reason: 'api_shutdown' })
      .catch((err) => this.deps.log.warn({ err, devbox: id }, 'a warm pool box could not be ended'));
  }
}
