import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../platform/store/types.js';
import type { Lifecycle } from '../devboxes/index.js';
import type { StatusEvents } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import type { EvictionConfig } from './eviction-config.js';
import { EvictionService } from './eviction-service.js';
import { PressureEvictor, psiTrigger, type PressureSource } from './memory-pressure.js';
import { SqlEvictionStore } from './sql-eviction-store.js';

export { EVICTIONS_SCHEMA } from './schema.js';
export { evictionRoutes } from './routes.js';
export { memAvailable } from './memory-pressure.js';
export { listenControl, runDrain } from './drain-socket.js';
export type { EvictionService } from './eviction-service.js';

export interface EvictionModule {
  service: EvictionService;
  /**
   * Frees memory before any tenant's box is evicted (a warm pool ends a pooled box): asked first at every
   * pressure event; true when it freed something, and no box is evicted for that event.
   */
  relieveFirst(fn: () => Promise<boolean>): void;
  /** Runs as every drain starts (`devboxd drain`, SIGTERM with suspend, a node draining), before any box is evicted. */
  beforeDrain(fn: () => Promise<unknown>): void;
  /** Starts the memory pressure source when configured (fails with the kernel's reason when it refuses). */
  start(): Promise<void>;
  close(): void;
}

/** Builds the eviction service and, with DEVBOXD_EVICT_ON_MEMORY_PRESSURE=on, its memory pressure source. */
export function buildEvictions(opts: {
  store: Store;
  lifecycle: Lifecycle;
  events: StatusEvents;
  suspend: (d: Devbox) => Promise<void>;
  /** Whether a snapshot of the box is in progress: the pressure evictor passes over such a box. */
  snapshotting?: (devboxId: string) => Promise<boolean>;
  node: string;
  config: EvictionConfig;
  log: Logger;
  /** Replaces the kernel's PSI trigger (tests of the policy); the server always uses the kernel's. */
  pressureSource?: PressureSource;
}): EvictionModule {
  const relievers: (() => Promise<boolean>)[] = [];
  const drainHooks: (() => Promise<unknown>)[] = [];
  const service = new EvictionService({
    store: new SqlEvictionStore(opts.store.db),
    devboxes: opts.store.devboxes,
    lifecycle: opts.lifecycle,
    events: opts.events,
    suspend: opts.suspend,
    node: opts.node,
    log: opts.log,
    beforeDrain: () => Promise.all(drainHooks.map((f) => f())),
  });
  const memory = opts.config.memory;
  const source = memory ? (opts.pressureSource ?? psiTrigger(memory.file, memory.trigger, opts.log)) : undefined;
  return {
    service,
    relieveFirst: (fn) => void relievers.push(fn),
    beforeDrain: (fn) => void drainHooks.push(fn),
    async start() {
      await service.reconcile();
      if (!memory || !source) return;
      const evictor = new PressureEvictor({
        evictions: service,
        snapshotting: opts.snapshotting,
        devboxes: opts.store.devboxes,
        lifecycle: opts.lifecycle,
        node: opts.node,
        config: memory,
        log: opts.log,
        relieve: async () => {
          for (const r of relievers) if (await r()) return true;
          return false;
        },
      });
      await source.start((line) => void evictor.onPressure(line));
      opts.log.info({ file: memory.file, trigger: memory.trigger, availableMinBytes: memory.availableMinBytes }, 'evicting devboxes on memory pressure');
    },
    close() {
      source?.close();
    },
  };
}

// What other resources import of this one's files: they reach it only through this index (npm run lint).
export * from './drain-socket.js';
