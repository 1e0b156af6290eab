import crypto from 'node:crypto';
import type { Logger } from '../../lib/logger.js';
import { DomainError, ERRORS } from '../../platform/errors.js';
import { SandboxError, type BoxProcess, type Sandbox } from '../../runtime/driver.js';
import type { DevboxService } from '../devboxes/index.js';
import type { Lifecycle } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import { CLIENT_HWM, track, type PtyClient, type PtySession } from './pty-session.js';

export type { PtyClient, PtySession } from './pty-session.js';

/** The size a session starts with unless its first connect names both. */
export const DEFAULT_SIZE = { cols: 80, rows: 24 };
/** Sessions one box holds at once. */
const MAX_PER_BOX = 32;
/** How long a closed session's shell has after SIGHUP before its process group is killed. */
const HANGUP_GRACE_MS = 2000;

/**
 * Terminal sessions in boxes: named by the client, one interactive login shell each on a terminal of the box
 * (SpawnSpec.tty), one client attached at a time. A session outlives its client for `idleTtlMs`, so a client
 * that reconnects finds the same shell; it ends with an explicit close, its TTL, or the box's processes (stop,
 * suspend). Its terminal is held on the host by its relay (SpawnSpec.hold), not by this server: a server
 * restart leaves the shell running, and the next server reattaches the session when it is asked for it
 * (`find`); nobody asking within `idleTtlMs` hangs it up. Output is read only while a client takes it: a
 * detached or slow client holds the shell at its next write (bounded by the relay's buffers), never the
 * server's memory.
 */
export class PtySessions {
  private readonly sessions = new Map<string, PtySession>();
  /** Sessions being started per box (their environment is read), by terminal key: they count already. */
  private readonly starting = new Map<string, Set<string>>();
  /** Per session, the connect or reattach under way: the next one waits for it (one shell per name). */
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly devboxes: () => DevboxService,
    readonly idleTtlMs: number,
    private readonly log: Logger,
  ) {}

  /** The session `name` as this server has it now (see `find` for one a server before it started). */
  get(devboxId: string, name: string): PtySession | undefined {
    const s = this.sessions.get(keyOf(devboxId, name));
    if (s && this.stale(s)) {
      this.drop(s, 1001, 'the devbox was restarted');
      return undefined;
    }
    return s;
  }

  /** The session `name` of a box: this server's, or one whose shell a server before it started (reattached). */
  find(d: Devbox, name: string): Promise<PtySession | undefined> {
    return this.locked(keyOf(d.id, name), () => this.findUnlocked(d.id, name));
  }

  /** The session `name` of a running box, started when there is none (or only an ended one). */
  connect(d: Devbox, name: string, size: { cols: number; rows: number } | null): Promise<{ session: PtySession; created: boolean }> {
    return this.locked(keyOf(d.id, name), async () => {
      const existing = await this.findUnlocked(d.id, name);
      if (existing && !existing.exit) {
        if (size) this.resize(existing, size.cols, size.rows);
        // A connect precedes an attach: the session waits for it a full TTL.
        if (!existing.client) this.armIdle(existing);
        return { session: existing, created: false };
      }
      if (existing) this.drop(existing, 1000, 'the shell exited');
      const box = this.lifecycle.active.get(d.id);
      if (d.status !== 'running' || !box) throw ERRORS.devboxNotRunning(d.id, d.status);
      // Held terminals count too: after a restart, sessions nobody asked for yet are only there.
      const held = await box.sandbox.heldTerminals();
      const key = terminalKey(name);
      const starting = this.starting.get(d.id) ?? new Set<string>();
      const taken = new Set([...held, ...starting, ...this.keysOf(d.id)]);
      if (taken.size >= MAX_PER_BOX && !taken.has(key)) throw ERRORS.badState(`devbox ${d.id} has ${MAX_PER_BOX} PTY sessions: close one first`);
      // The slot is taken before the await: connects that wait together cannot all pass the cap.
      starting.add(key);
      this.starting.set(d.id, starting);
      try {
        return await this.start(d, name, size);
      } finally {
        starting.delete(key);
        if (starting.size === 0) this.starting.delete(d.id);
      }
    });
  }

  private async start(d: Devbox, name: string, size: { cols: number; rows: number } | null): Promise<{ session: PtySession; created: boolean }> {
    const { env, argv } = await this.shellOf(d);
    const box = this.lifecycle.active.get(d.id);
    if (d.status !== 'running' || !box) throw ERRORS.devboxNotRunning(d.id, d.status);
    const { cols, rows } = size ?? DEFAULT_SIZE;
    let proc: BoxProcess;
    try {
      proc = box.sandbox.spawn({ argv, env, tty: { cols, rows }, hold: { key: terminalKey(name), ms: this.idleTtlMs } });
    } catch (err) {
      if (err instanceof SandboxError) throw ERRORS.devboxNotRunning(d.id, 'stopping'); // it went meanwhile
      throw err;
    }
    return { session: this.add(d.id, name, proc, box.sandbox, cols, rows), created: true };
  }

  private async findUnlocked(devboxId: string, name: string): Promise<PtySession | undefined> {
    const own = this.get(devboxId, name);
    if (own) return own;
    const box = this.lifecycle.active.get(devboxId);
    if (!box) return undefined;
    let held;
    try {
      held = await box.sandbox.reattach(terminalKey(name));
    } catch (err) {
      if (err instanceof SandboxError) throw ERRORS.unavailable(`PTY session ${name} cannot be reached now: ${err.message}`);
      throw err;
    }
    if (!held) return undefined;
    if (this.lifecycle.active.get(devboxId)?.sandbox !== box.sandbox) {
      held.proc.close();
      return undefined;
    }
    this.log.info({ devbox: devboxId, session: name }, 'PTY session reattached');
    return this.add(devboxId, name, held.proc, box.sandbox, held.cols, held.rows);
  }

  private add(devboxId: string, name: string, proc: BoxProcess, sandbox: Sandbox, cols: number, rows: number): PtySession {
    const session: PtySession = { devboxId, name, cols, rows, proc, sandbox, client: null, exit: null, inFlight: 0, idleTimer: undefined };
    this.sessions.set(keyOf(devboxId, name), session);
    track(session, (chunk) => this.output(session, chunk));
    this.armIdle(session);
    return session;
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
    // Forgotten here, so nobody may reattach it (a connect now starts afresh), even while its shell ends.
    session.proc.release?.();
    session.proc.stdout.destroy();
    session.proc.stdin.destroy();
    if (hangUp) session.proc.close();
    this.log.debug({ devbox: session.devboxId, session: session.name, reason }, 'PTY session ended');
  }

  private stale(s: PtySession): boolean {
    return this.lifecycle.active.get(s.devboxId)?.sandbox !== s.sandbox;
  }

  private keysOf(devboxId: string): string[] {
    const keys: string[] = [];
    for (const s of this.sessions.values()) if (s.devboxId === devboxId) keys.push(terminalKey(s.name));
    return keys;
  }

  /** Runs `fn` once the one under way for `key` settled (whatever its outcome). */
  private locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.locks.get(key) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }
}

function keyOf(devboxId: string, name: string): string {
  return `${devboxId}/${name}`;
}

/** A session's terminal key in its sandbox (SpawnSpec.hold): names run to 256 characters, a file name's limit. */
function terminalKey(name: string): string {
  return crypto.createHash('sha256').update(name).digest('hex').slice(0, 32);
}
