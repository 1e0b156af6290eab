import type { Logger } from '../../lib/logger.js';
import { DomainError, ERRORS } from '../../platform/errors.js';
import { SandboxError, type BoxProcess, type ProcessExit, type Sandbox } from '../../runtime/driver.js';
import type { DevboxService } from '../devboxes/devbox-service.js';
import type { Lifecycle } from '../devboxes/lifecycle.js';
import type { Devbox } from '../devboxes/types.js';

/** The size a session starts with unless its first connect names both. */
export const DEFAULT_SIZE = { cols: 80, rows: 24 };
/** Sessions one box holds at once. */
const MAX_PER_BOX = 32;
/** How long the output of an exited shell may take to end before its client is told anyway. */
const EXIT_GRACE_MS = 1000;
/** How long a closed session's shell has after SIGHUP before its process group is killed. */
const HANGUP_GRACE_MS = 2000;

/** What a session's attached client is: a byte sink with back-pressure, and a way to end it. */
export interface PtyClient {
  /** Sends terminal bytes; `done` runs once they left (the session reads on while few wait). */
  send(data: Buffer, done: () => void): void;
  /** Stops / resumes taking the client's input (the terminal's input is full / has room again). */
  pause(): void;
  resume(): void;
  /** Ends the connection: the shell exited (1000), the session was closed or the box stopped (1001). */
  end(code: number, reason: string): void;
  /** False once the client said goodbye (its connection may still be closing). */
  readonly open: boolean;
}

export interface PtySession {
  devboxId: string;
  name: string;
  cols: number;
  rows: number;
  proc: BoxProcess;
  /** The sandbox the shell runs in: a resumed box has another, and the session is then stale. */
  sandbox: Sandbox;
  client: PtyClient | null;
  exit: ProcessExit | null;
  /** Bytes sent to the client and not yet gone out. */
  inFlight: number;
  idleTimer: NodeJS.Timeout | undefined;
}

/** Terminal bytes waiting for a slow client before the terminal is no longer read (the shell then blocks). */
const CLIENT_HWM = 256 * 1024;

/**
 * Terminal sessions in boxes: named by the client, one interactive login shell each on a terminal of the box
 * (SpawnSpec.tty), one client attached at a time. A session outlives its client for `idleTtlMs`, so a client
 * that reconnects finds the same shell; it ends with an explicit close, its TTL, or the box's processes (stop,
 * suspend). Output is read only while a client takes it: a detached or slow client holds the shell at its
 * next write (bounded by the relay's buffers), never the server's memory.
 */
export class PtySessions {
  private readonly sessions = new Map<string, PtySession>();
  /** Sessions being started per box (their environment is read): they count against the cap already. */
  private readonly starting = new Map<string, number>();

  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly devboxes: () => DevboxService,
    readonly idleTtlMs: number,
    private readonly log: Logger,
  ) {}

  get(devboxId: string, name: string): PtySession | undefined {
    const s = this.sessions.get(keyOf(devboxId, name));
    if (s && this.stale(s)) {
      this.drop(s, 1001, 'the devbox was restarted');
      return undefined;
    }
    return s;
  }

  /** The session `name` of a running box, started when there is none (or only an ended one). */
  async connect(d: Devbox, name: string, size: { cols: number; rows: number } | null): Promise<{ session: PtySession; created: boolean }> {
    const existing = this.get(d.id, name);
    if (existing && !existing.exit) {
      if (size) this.resize(existing, size.cols, size.rows);
      // A connect precedes an attach: the session waits for it a full TTL.
      if (!existing.client) this.armIdle(existing);
      return { session: existing, created: false };
    }
    if (existing) this.drop(existing, 1000, 'the shell exited');
    if (this.countOf(d.id) >= MAX_PER_BOX) throw ERRORS.badState(`devbox ${d.id} has ${MAX_PER_BOX} PTY sessions: close one first`);
    // The slot is taken before the await: connects that wait together cannot all pass the cap.
    this.starting.set(d.id, (this.starting.get(d.id) ?? 0) + 1);
    try {
      return await this.start(d, name, size);
    } finally {
      const n = this.starting.get(d.id)! - 1;
      if (n === 0) this.starting.delete(d.id);
      else this.starting.set(d.id, n);
    }
  }

  private async start(d: Devbox, name: string, size: { cols: number; rows: number } | null): Promise<{ session: PtySession; created: boolean }> {
    const { env, argv } = await this.shellOf(d);
    // Another connect may have started the same session while the environment was read.
    const raced = this.get(d.id, name);
    if (raced && !raced.exit) return { session: raced, created: false };
    const box = this.lifecycle.active.get(d.id);
    if (d.status !== 'running' || !box) throw ERRORS.devboxNotRunning(d.id, d.status);
    const devboxId = d.id;
    const { cols, rows } = size ?? DEFAULT_SIZE;
    let proc: BoxProcess;
    try {
      proc = box.sandbox.spawn({ argv, env, tty: { cols, rows } });
    } catch (err) {
      if (err instanceof SandboxError) throw ERRORS.devboxNotRunning(d.id, 'stopping'); // it went meanwhile
      throw err;
    }
    const session: PtySession = { devboxId, name, cols, rows, proc, sandbox: box.sandbox, client: null, exit: null, inFlight: 0, idleTimer: undefined };
    this.sessions.set(keyOf(devboxId, name), session);
    proc.stdout.pause(); // read once a client takes it
    proc.stdout.on('data', (chunk: Buffer) => this.output(session, chunk));
    proc.stdout.on('end', () => {
      if (session.exit) session.client?.end(1000, exitReason(session.exit));
    });
    proc.stdin.on('error', () => undefined); // the shell is gone: what is typed goes nowhere
    proc.stdin.on('drain', () => session.client?.resume());
    void proc.exited.then((exit) => {
      session.exit = exit;
      if (proc.stdout.readableEnded) return session.client?.end(1000, exitReason(exit));
      // The output ends once nothing holds the terminal any more; a process the shell left behind holding
      // it does not hold the client: once what was read is delivered, the client is told the shell exited.
      const told = setInterval(() => {
        if (proc.stdout.readableEnded || !session.client) return clearInterval(told);
        if (session.inFlight === 0 && proc.stdout.readableLength === 0) {
          clearInterval(told);
          session.client.end(1000, exitReason(exit));
        }
      }, EXIT_GRACE_MS);
      told.unref();
    });
    this.armIdle(session);
    return { session, created: true };
  }

  /**
   * A login shell with the box's environment. An environment that cannot be made (a bound secret that does
   * not open) starts no shell: a stand-in shows the reason (names, never values) on the terminal and exits
   * 126, as executions do.
   */
  private async shellOf(d: Devbox): Promise<{ env: Record<string, string>; argv: string[] }> {
    try {
      return { env: await this.devboxes().environmentOf(d), argv: ['bash', '-l'] };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      return { env: d.environment, argv: ['sh', '-c', 'printf "devboxd: %s\\r\\n" "$1"; exit 126', 'devboxd', err.message] };
    }
  }

  /** Whether a client is attached: one that said goodbye is not, even before its connection closed. */
  attached(session: PtySession): boolean {
    return session.client?.open === true;
  }

  /** Attaches a client; false when another one is attached (single attach) or the session ended. */
  attach(session: PtySession, client: PtyClient): boolean {
    if (this.attached(session) || this.sessions.get(keyOf(session.devboxId, session.name)) !== session) return false;
    if (session.client) this.detach(session, session.client); // leaving: its close is still on the way
    session.client = client;
    clearTimeout(session.idleTimer);
    this.devboxes().busy(session.devboxId, 1);
    session.proc.stdout.resume();
    return true;
  }

  /** The client's bytes, typed into the terminal; false asks the client to pause. */
  input(session: PtySession, data: Buffer): void {
    this.devboxes().touch(session.devboxId);
    if (session.exit || session.proc.stdin.destroyed) return;
    if (!session.proc.stdin.write(data)) session.client?.pause();
  }

  /** The client went away: the session waits `idleTtlMs` for the next one. */
  detach(session: PtySession, client: PtyClient): void {
    if (session.client !== client) return;
    session.client = null;
    session.inFlight = 0;
    this.devboxes().busy(session.devboxId, -1);
    session.proc.stdout.pause();
    this.armIdle(session);
  }

  resize(session: PtySession, cols: number, rows: number): void {
    if (session.exit) throw ERRORS.badState(`the shell of PTY session ${session.name} has exited`);
    session.proc.resize(cols, rows);
    session.cols = cols;
    session.rows = rows;
  }

  signal(session: PtySession, sig: NodeJS.Signals): void {
    if (session.exit) throw ERRORS.badState(`the shell of PTY session ${session.name} has exited: no foreground process group`);
    session.proc.signal(sig, 'foreground');
  }

  /**
   * SIGHUP to the foreground group and the shell, then the session is gone; once the shell exited (or its
   * group was killed after the grace) the terminal is closed, which hangs it up for a process that left the
   * shell's session and still holds it.
   */
  close(session: PtySession): void {
    if (!session.exit) {
      const { proc } = session;
      proc.signal('SIGHUP', 'foreground');
      proc.signal('SIGHUP', true);
      const kill = setTimeout(() => {
        proc.signal('SIGKILL', true);
        proc.close();
      }, HANGUP_GRACE_MS);
      kill.unref();
      void proc.exited.then(() => {
        clearTimeout(kill);
        proc.close();
      });
      return this.drop(session, 1000, 'the session was closed', false);
    }
    this.drop(session, 1000, 'the session was closed');
  }

  /** The box's processes are gone (stop, suspend): so are its sessions. */
  readonly onStopped = (devboxId: string): void => {
    for (const s of [...this.sessions.values()]) if (s.devboxId === devboxId) this.drop(s, 1001, 'the devbox stopped');
  };

  private output(session: PtySession, chunk: Buffer): void {
    const client = session.client;
    if (!client) return; // detached between a read and its delivery: the bytes go with the old client
    this.devboxes().touch(session.devboxId);
    session.inFlight += chunk.length;
    if (session.inFlight >= CLIENT_HWM) session.proc.stdout.pause();
    client.send(chunk, () => {
      if (session.client !== client) return;
      session.inFlight -= chunk.length;
      if (session.inFlight < CLIENT_HWM / 2 && session.proc.stdout.isPaused()) session.proc.stdout.resume();
    });
  }

  private armIdle(session: PtySession): void {
    clearTimeout(session.idleTimer);
    session.idleTimer = setTimeout(() => {
      if (!session.client) this.close(session);
    }, this.idleTtlMs);
    session.idleTimer.unref();
  }

  /** Forgets a session and ends its client; with `hangUp`, at once its terminal too (see BoxProcess.close). */
  private drop(session: PtySession, code: number, reason: string, hangUp = true): void {
    const key = keyOf(session.devboxId, session.name);
    if (this.sessions.get(key) === session) this.sessions.delete(key);
    clearTimeout(session.idleTimer);
    const client = session.client;
    if (client) {
      this.detach(session, client);
      client.end(code, reason);
    }
    clearTimeout(session.idleTimer);
    session.proc.stdout.destroy();
    session.proc.stdin.destroy();
    if (hangUp) session.proc.close();
    this.log.debug({ devbox: session.devboxId, session: session.name, reason }, 'PTY session ended');
  }

  private stale(s: PtySession): boolean {
    return this.lifecycle.active.get(s.devboxId)?.sandbox !== s.sandbox;
  }

  private countOf(devboxId: string): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.devboxId === devboxId) n++;
    return n + (this.starting.get(devboxId) ?? 0);
  }
}

function keyOf(devboxId: string, name: string): string {
  return `${devboxId}/${name}`;
}

function exitReason(exit: ProcessExit): string {
  return exit.signal ? `the shell was killed by ${exit.signal}` : `the shell exited with status ${exit.exitCode}`;
}
