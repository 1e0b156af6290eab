/**
 * native/nftsetd, the element changes of the egress table's sets over netlink: what changes per box (its
 * interface in `nodes`, `all_out`, `cidrs`; the addresses its DNS answers pin) changes without the `nft`
 * tool, which reads every set element on the host before each change. One command per line, one answer per
 * command, in order; a daemon that dies is started again at the next command.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { RuntimeLogger } from './logger.js';
import { native } from './paths.js';

export class NftSetDaemon {
  private child: ChildProcess | undefined;
  private ready: Promise<ChildProcess> | undefined;
  private pending: ((answer: string) => void)[] = [];

  constructor(
    private readonly table: string,
    private readonly log: RuntimeLogger,
  ) {}

  private start(): Promise<ChildProcess> {
    this.ready ??= new Promise<ChildProcess>((resolve, reject) => {
      const child = spawn(native.nftsetd, [this.table], { stdio: ['pipe', 'pipe', 'pipe'], env: {} });
      let started = false;
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2048)));
      child.stdin!.on('error', () => undefined);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!started) {
          started = true;
          this.child = child;
          this.hold(false);
          resolve(child);
          return;
        }
        this.pending.shift()?.(line);
        this.hold(this.pending.length > 0);
      });
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        if (!started) reject(new Error(`nftsetd ended (${code ?? signal}): ${err.trim()}`));
        if (this.child === child) {
          this.child = undefined;
          this.ready = undefined;
          this.log.warn({ code, signal, stderr: err.trim() }, 'nftsetd exited');
        }
        for (const p of this.pending.splice(0)) p('err the set daemon exited');
      });
    }).catch((err) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  /** The daemon keeps the server alive only while a command waits on it. */
  private hold(busy: boolean): void {
    const c = this.child;
    if (!c) return;
    for (const h of [c, c.stdin, c.stdout, c.stderr] as unknown as { ref?: () => void; unref?: () => void }[]) {
      if (busy) h.ref?.();
      else h.unref?.();
    }
  }

  /** Runs the commands in order; rejects with the first error (the others still run). */
  async run(commands: string[]): Promise<void> {
    if (commands.length === 0) return;
    const child = await this.start();
    const answers = commands.map(
      (c) =>
        new Promise<string>((resolve) => {
          this.pending.push(resolve);
          this.hold(true);
          child.stdin!.write(`${c}\n`);
        }),
    );
    const failed = (await Promise.all(answers)).map((a, i) => (a === 'ok' ? null : `${commands[i]}: ${a}`)).find(Boolean);
    if (failed) throw new Error(`nftsetd: ${failed}`);
  }

  close(): void {
    this.child?.stdin?.end();
    this.child = undefined;
    this.ready = undefined;
  }
}
