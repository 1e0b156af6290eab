/**
 * Notices boxes whose init died outside of destroy(). One shared timer for every box: each tick costs
 * one kill(pid, 0) per box; every fourth tick reads /proc/<pid>/stat instead, which also catches an init
 * left as a zombie by a lazy host reaper and a recycled pid.
 */
import { isAlive, pidExists } from './proc.js';

const TICK_MS = 250;

interface Watched {
  pid: number;
  startTime: number;
  onDeath: () => void;
}

export class LivenessWatcher {
  private readonly boxes = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;

  watch(id: string, pid: number, startTime: number, onDeath: () => void): void {
    this.boxes.set(id, { pid, startTime, onDeath });
    if (!this.timer) {
      this.timer = setInterval(() => this.check(), TICK_MS);
      this.timer.unref();
    }
  }

  unwatch(id: string): void {
    this.boxes.delete(id);
    if (this.boxes.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private check(): void {
    const thorough = ++this.ticks % 4 === 0;
    for (const [id, box] of this.boxes) {
      const alive = thorough ? isAlive(box.pid, box.startTime) : pidExists(box.pid);
      if (!alive) {
        this.unwatch(id);
        box.onDeath();
      }
    }
  }
}
