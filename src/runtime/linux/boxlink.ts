/**
 * The box-services link on the host: native/boxlinkd, one daemon for every box, holding a listener inside
 * each linked box's network namespace and relaying its connections to a unix socket of the server (see
 * boxlinkd.c). This side speaks its line protocol, remembers what is linked and, should the daemon die,
 * starts it again and re-links every box.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { SandboxError } from '../driver.js';
import type { RuntimeLogger } from './logger.js';
import { native } from './paths.js';

/** Connections one box holds through its link at once; past it the daemon closes new ones at once. */
export const MAX_LINK_CONNECTIONS = 64;
/** Pause before the daemon is started again after it died (it should not die; this keeps a crash loop slow). */
const RESTART_DELAY_MS = 200;
/** What a command's answer is when the daemon died before giving one. */
const DIED = 'the link daemon died';

export interface LinkTarget {
  /** The box's init (host pid) and its start time: the daemon enters that process's network namespace. */
  pid: number;
  startTime: number;
  port: number;
  socketPath: string;
}

interface Pending {
  id: string;
  resolve: (reason: string | null) => void;
}

export class BoxLinkDaemon {
  private child: ChildProcess | undefined;
  private starting: Promise<ChildProcess> | undefined;
  private stopped = false;
  /** Answers come in the order of the commands. */
  private pending: Pending[] = [];
  private readonly links = new Map<string, LinkTarget>();
  /** The daemon each box's latest `add` went to: a successor that has it already is not sent it again. */
  private readonly sentTo = new Map<string, ChildProcess>();

  constructor(
    private readonly log: RuntimeLogger,
    /** The daemon's program (tests put a fake in its place). */
    private readonly program = native.boxlinkd,
  ) {}

  /** The daemon's pid while it runs (tests look at its fds). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<ChildProcess> {
    if (this.child) return Promise.resolve(this.child);
    this.starting ??= new Promise<ChildProcess>((resolve, reject) => {
      const child = spawn(this.program, [String(MAX_LINK_CONNECTIONS)], { stdio: ['pipe', 'pipe', 'pipe'], env: {} });
      let err = '';
      let ready = false;
      child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4096)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!ready) {
          ready = true;
          this.child = child;
          // The daemon must not keep the server alive (it ends with the server's stdin pipe anyway).
          child.unref();
          for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void }).unref?.();
          resolve(child);
          return;
        }
        this.answer(line);
      });
      child.stdin!.on('error', () => undefined);
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        if (!ready) reject(new Error(`boxlinkd ended (${code ?? signal}): ${err.trim()}`));
        if (this.child !== child) return;
        this.child = undefined;
        for (const p of this.pending.splice(0)) p.resolve(DIED);
        if (this.stopped) return;
        this.log.warn({ code, signal, stderr: err.trim() }, 'boxlinkd exited; starting it again');
        setTimeout(() => void this.relink(), RESTART_DELAY_MS).unref();
      });
    }).finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private answer(line: string): void {
    const p = this.pending.shift();
    if (!p) return;
    const [status, id, ...why] = line.split(' ');
    if (id !== p.id) this.log.error({ line, expected: p.id }, 'boxlinkd answered out of order');
    p.resolve(status === 'ok' ? null : why.join(' ') || 'unknown error');
  }

  /** Sends one command; resolves null on `ok`, else the daemon's reason. */
  private async send(id: string, line: string): Promise<string | null> {
    const child = await this.start();
    return new Promise((resolve) => {
      this.pending.push({ id, resolve });
      if (line.startsWith('add ')) this.sentTo.set(id, child);
      child.stdin!.write(`${line}\n`);
    });
  }

  /** Serves 127.0.0.1:port inside the box (replacing an earlier link of that box). */
  async add(id: string, target: LinkTarget): Promise<void> {
    if (/\s/.test(id) || /\s/.test(target.socketPath)) throw new SandboxError('failed', 'box ids and socket paths hold no spaces');
    this.links.set(id, target);
    let why = await this.send(id, addLine(id, target));
    // A daemon that died under the command: its successor takes it (a box's boot does not fail for that).
    for (let i = 0; i < 3 && why === DIED && this.links.get(id) === target; i++) why = await this.send(id, addLine(id, target));
    if (why === null) return;
    if (this.links.get(id) === target) this.links.delete(id);
    throw new SandboxError('failed', `linking the box services of ${id} failed: ${why}`);
  }

  async remove(id: string): Promise<void> {
    this.sentTo.delete(id);
    if (!this.links.delete(id) || !this.child) return;
    await this.send(id, `del ${id}`);
  }

  /** After a crash: a fresh daemon and every link again. */
  private async relink(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.start();
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'boxlinkd did not start again');
      setTimeout(() => void this.relink(), RESTART_DELAY_MS * 10).unref();
      return;
    }
    for (const [id, target] of this.links) {
      // An `add` that died with the old daemon was sent to this one by its own retry already: a second would
      // replace that link and cut the connections the box made meanwhile.
      if (this.sentTo.get(id) === this.child) continue;
      void this.send(id, addLine(id, target)).then((why) => {
        if (why !== null) this.log.error({ devbox: id, reason: why }, 'box services could not be linked again');
      });
    }
  }

  stop(): void {
    this.stopped = true;
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }
}

const addLine = (id: string, t: LinkTarget) => `add ${id} ${t.pid} ${t.startTime} ${t.port} ${t.socketPath}`;
