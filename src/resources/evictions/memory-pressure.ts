import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { nativeHelper } from '../../lib/install-root.js';
import type { Logger } from '../../lib/logger.js';
import type { DevboxStore } from '../devboxes/index.js';
import type { Lifecycle } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import { isPooled } from '../devboxes/index.js';
import type { MemoryPressureConfig } from './eviction-config.js';
import type { EvictionService } from './eviction-service.js';

const PSIWATCH = nativeHelper('psiwatch');

/** Where pressure events come from: the kernel's PSI trigger in production (`psiTrigger`). */
export interface PressureSource {
  /** Resolves once events flow; each event calls `onEvent` with what the kernel reported. */
  start(onEvent: (line: string) => void): Promise<void>;
  close(): void;
}

/**
 * The kernel's PSI trigger on a pressure file, registered and polled by `native/psiwatch` (Node cannot poll a
 * descriptor for POLLPRI): one event per window in which tasks stalled on memory longer than the threshold.
 * Start fails with the kernel's reason when it refuses the trigger (no PSI, a window it does not take).
 */
export function psiTrigger(file: string, trigger: string, log: Logger): PressureSource {
  let child: ChildProcess | undefined;
  let closing = false;
  return {
    start: (onEvent) =>
      new Promise((resolve, reject) => {
        const c = spawn(PSIWATCH, [file, trigger], { stdio: ['pipe', 'pipe', 'pipe'] });
        child = c;
        let stderr = '';
        let ready = false;
        c.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4096)));
        createInterface({ input: c.stdout! }).on('line', (line) => {
          if (ready) return onEvent(line);
          ready = line === 'ready';
          if (ready) resolve();
        });
        c.once('error', reject);
        c.once('exit', (code) => {
          if (!ready) reject(new Error(`memory pressure trigger: ${stderr.trim() || `psiwatch exited with ${code}`}`));
          else if (!closing)
            log.error({ code, stderr: stderr.trim() }, 'the memory pressure trigger stopped: no eviction on memory pressure until the server restarts');
        });
      }),
    close() {
      closing = true;
      child?.stdin?.end();
    },
  };
}

/** MemAvailable of /proc/meminfo, bytes. */
export async function memAvailable(): Promise<number> {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(await readFile('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : Number.POSITIVE_INFINITY;
}

export interface PressureEvictorDeps {
  evictions: EvictionService;
  devboxes: DevboxStore;
  lifecycle: Lifecycle;
  node: string;
  config: MemoryPressureConfig;
  log: Logger;
  /** Whether a snapshot of the box is in progress (its suspend would wait for it). */
  snapshotting?: (devboxId: string) => Promise<boolean>;
  /** Frees memory ahead of any box (a warm pool's boxes go first); true when it did. */
  relieve?: () => Promise<boolean>;
  /** Host memory available now (bytes); /proc/meminfo's MemAvailable. */
  available?: () => Promise<number>;
}

/**
 * Suspends boxes while the host is short of memory, one per pressure event: the kernel reports pressure at most
 * once per window while it lasts, and an event that arrives while an eviction is still under way is dropped
 * (that eviction's relief shows in the next window), so it never evicts more than the pressure asks for. With a
 * floor set, an event evicts only when the host's available memory is under it: a box stalling against its own
 * memory limit also shows as host pressure, and suspending others would not help it.
 */
export class PressureEvictor {
  private busy = false;
  /** When "nothing to evict" was last logged: pressure without boxes would log it every window. */
  private quietLoggedAt = 0;

  constructor(private readonly deps: PressureEvictorDeps) {}

  /** One pressure event; resolves once it evicted a box, or decided not to. */
  async onPressure(line: string): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const { config, log } = this.deps;
      const available = await (this.deps.available ?? memAvailable)();
      if (config.availableMinBytes > 0 && available >= config.availableMinBytes) {
        log.debug({ psi: line, available }, 'memory pressure with enough memory available: no eviction');
        return;
      }
      if (await this.deps.relieve?.()) return;
      const victim = await this.pick();
      if (!victim) {
        if (Date.now() - this.quietLoggedAt > 60_000) {
          this.quietLoggedAt = Date.now();
          log.warn({ psi: line, available }, 'memory pressure, but no devbox of this server to evict');
        }
        return;
      }
      log.warn({ psi: line, available, devbox: victim.id }, 'memory pressure: evicting a devbox');
      await this.deps.evictions.evict(victim, 'resource_pressure', config.graceMs);
    } catch (err) {
      this.deps.log.error({ err }, 'memory pressure eviction failed');
    } finally {
      this.busy = false;
    }
  }

  /**
   * The box whose suspension frees the most memory, an idle box's memory counting IDLE_WEIGHT times (its owner
   * loses less): a tenant cannot shield a large box by keeping it busy while others' small idle ones go. A box
   * with a snapshot in progress is skipped: its suspend would not run, so its eviction would be a false alarm.
   */
  private async pick(): Promise<Devbox | undefined> {
    const { lifecycle, devboxes, node, evictions, snapshotting } = this.deps;
    const candidates: { d: Devbox; score: number }[] = [];
    for (const d of await devboxes.listByStatus(['running'], node)) {
      if (isPooled(d)) continue; // a warm pool's: ended by `relieve`, never suspended
      const box = lifecycle.active.get(d.id);
      if (!box || evictions.evicting(d.id)) continue;
      if (snapshotting && (await snapshotting(d.id).catch(() => false))) continue;
      const stats = await box.sandbox.stats().catch(() => undefined);
      const memory = stats?.memoryBytes ?? 0;
      candidates.push({ d, score: box.busy === 0 ? memory * IDLE_WEIGHT : memory });
    }
    candidates.sort((a, b) => b.score - a.score);
    return candidates[0]?.d;
  }
}

/** How much more an idle box's memory counts than a busy one's when choosing the victim. */
const IDLE_WEIGHT = 2;
