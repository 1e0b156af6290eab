/**
 * One long-lived `nft -i` process that applies nftables batches: a spawn of `nft` per change would cost a
 * box's create several milliseconds. Each request is one line (one transaction: all of its commands apply
 * or none do), followed by a marker command that fails on purpose; its error on stderr ends the request's
 * answer, and any error printed before it is the request's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { RuntimeLogger } from './logger.js';

interface Pending {
  mark: string;
  errors: string[];
  resolve: (err: string | null) => void;
}

export class NftShell {
  private child: ChildProcess | undefined;
  private readonly pending: Pending[] = [];
  private seq = 0;

  constructor(
    private readonly table: string,
    private readonly log: RuntimeLogger,
  ) {}

  private start(): ChildProcess {
    if (this.child) return this.child;
    const child = spawn('nft', ['-i'], { stdio: ['pipe', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    child.stdin!.on('error', () => undefined);
    child.on('error', (err) => {
      this.log.error({ err: err.message }, 'nft did not start');
      if (this.child === child) this.child = undefined;
      for (const p of this.pending.splice(0)) p.resolve(`nft did not start: ${err.message}`);
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      const p = this.pending[0];
      if (!p) return;
      if (line.includes(p.mark)) {
        // The marker's own error line came just before its echo.
        p.errors.pop();
        this.pending.shift();
        this.hold(this.pending.length > 0);
        p.resolve(p.errors.length ? p.errors.join('\n') : null);
      } else if (line.startsWith('Error')) p.errors.push(line);
    });
    child.on('exit', () => {
      if (this.child === child) this.child = undefined;
      for (const p of this.pending.splice(0)) p.resolve('nft exited');
    });
    this.child = child;
    this.hold(false);
    return child;
  }

  /** The process keeps the server alive only while a request waits on it. */
  private hold(busy: boolean): void {
    const c = this.child;
    if (!c) return;
    for (const h of [c, c.stdin, c.stderr] as unknown as { ref?: () => void; unref?: () => void }[]) {
      if (busy) h.ref?.();
      else h.unref?.();
    }
  }

  /** Applies `commands` as one transaction; rejects with nft's message when it refuses them. */
  run(commands: string[]): Promise<void> {
    const text = commands.join('; ');
    if (text.includes('\n')) return Promise.reject(new Error('nft commands hold no newline'));
    const mark = `devboxd_mark_${process.pid}_${++this.seq}`;
    const child = this.start();
    return new Promise<string | null>((resolve) => {
      this.pending.push({ mark, errors: [], resolve });
      this.hold(true);
      child.stdin!.write(`${text}\nlist chain ${this.table} ${mark}\n`);
    }).then((err) => {
      if (err) throw new Error(`nft: ${err}`);
    });
  }

  close(): void {
    this.child?.stdin?.end();
    this.child = undefined;
  }
}
