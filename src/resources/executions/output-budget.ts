import fs from 'node:fs';
import { rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../lib/logger.js';
import type { BudgetAccount } from './output-writer.js';

export interface OutputLimits {
  /** Bytes kept per stream of one execution (head + most recent). */
  streamMaxBytes: number;
  /** Bytes kept for all executions of one box; finished executions' output is evicted oldest first past it. */
  boxMaxBytes: number;
  /** How long output outlives its box, ms (0: removed as the box ends). */
  retentionMs: number;
}

/** What the budget needs to know of a box: whether it ended, and when. */
export type BoxLookup = (devboxId: string) => Promise<{ ended: boolean; endTimeMs: number | null } | undefined>;

/** Output of one finished execution, oldest first in its box's queue. */
interface Finished {
  id: string;
  bytes: number;
  paths: string[];
}

interface BoxOutputs {
  used: number;
  finished: Finished[];
}

/**
 * Execution output of each box under `<dataDir>/executions/<devbox>/`: counts its bytes, evicts finished
 * executions' output oldest first when the box's budget is short, and removes the directory once the box
 * ended (after the retention period). Counts are kept as bytes are written and removed, never by a periodic
 * walk; a box met again after a restart has its directory read once.
 */
export class OutputBudget {
  private readonly boxes = new Map<string, BoxOutputs>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly root: string,
    readonly limits: OutputLimits,
    private readonly log: Logger,
  ) {}

  dirOf(devboxId: string): string {
    return path.join(this.root, devboxId);
  }

  /** Segment size for new streams: an eighth of the per-stream cap, so the kept bytes stay within 1/8 of it. */
  get segmentBytes(): number {
    return Math.max(4096, Math.floor(this.limits.streamMaxBytes / 8));
  }

  /**
   * Creates the box's directory and counts what earlier server processes left in it: once per box and
   * server process, synchronously (usually an empty directory) so an execution starts without a wait.
   */
  prepare(devboxId: string): void {
    if (this.boxes.has(devboxId)) return;
    const box: BoxOutputs = { used: 0, finished: [] };
    this.load(devboxId, box);
    this.boxes.set(devboxId, box);
  }

  account(devboxId: string): BudgetAccount {
    const box = this.boxes.get(devboxId);
    if (!box) throw new Error(`output budget of ${devboxId} not prepared`);
    return {
      add: (n) => void (box.used += n),
      release: (n) => void (box.used -= n),
      makeRoom: async (n) => {
        while (box.used + n > this.limits.boxMaxBytes && box.finished.length > 0) await this.evict(box, box.finished.shift()!);
        return box.used + n <= this.limits.boxMaxBytes;
      },
    };
  }

  /** An execution of the box finished with these files kept: its output becomes evictable. */
  finished(devboxId: string, id: string, bytes: number, paths: string[]): void {
    this.boxes.get(devboxId)?.finished.push({ id, bytes, paths });
  }

  /** The box ended: its output goes once `settled` resolved (writers closed) and the retention passed. */
  boxEnded(devboxId: string, endTimeMs: number, settled: Promise<unknown> = Promise.resolve()): void {
    if (this.timers.has(devboxId)) return;
    const delay = Math.max(0, endTimeMs + this.limits.retentionMs - Date.now());
    const timer = setTimeout(() => {
      void settled.then(() => this.remove(devboxId));
    }, delay);
    timer.unref();
    this.timers.set(devboxId, timer);
  }

  /** At start: output of boxes that ended (or are unknown) is scheduled for removal. */
  async reconcile(lookup: BoxLookup): Promise<void> {
    let names: string[];
    try {
      names = fs.readdirSync(this.root);
    } catch {
      return;
    }
    for (const name of names) {
      const box = await lookup(name);
      if (!box) this.boxEnded(name, 0);
      else if (box.ended) this.boxEnded(name, box.endTimeMs ?? 0);
    }
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private async remove(devboxId: string): Promise<void> {
    this.boxes.delete(devboxId);
    this.timers.delete(devboxId);
    await rm(this.dirOf(devboxId), { recursive: true, force: true }).catch((err) =>
      this.log.warn({ err, devbox: devboxId }, 'could not remove execution output'),
    );
  }

  private async evict(box: BoxOutputs, f: Finished): Promise<void> {
    // The head goes last: a reader that finds it knows the output is still there, without it that it is gone.
    for (const p of [...f.paths].reverse()) await unlink(p).catch(() => undefined);
    box.used -= f.bytes;
  }

  private load(devboxId: string, box: BoxOutputs): void {
    const dir = this.dirOf(devboxId);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const byId = new Map<string, Finished>();
    for (const name of fs.readdirSync(dir)) {
      const id = name.slice(0, name.indexOf('.'));
      const p = path.join(dir, name);
      let size = 0;
      try {
        size = fs.statSync(p).size;
      } catch {
        /* removed meanwhile */
      }
      const f = byId.get(id) ?? { id, bytes: 0, paths: [] };
      f.bytes += size;
      f.paths.push(p);
      byId.set(id, f);
      box.used += size;
    }
    // Ids are time-ordered: sorting them puts the oldest output first.
    box.finished.push(...[...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1)));
    for (const f of box.finished) f.paths.sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
  }
}
