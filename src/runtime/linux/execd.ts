/**
 * The fast path for commands: native/boxexecd, a small daemon the driver starts once. Each command is
 * one unix-socket connection carrying framed stdio, signals and the exit status (see boxexecd.c), so
 * the server never forks itself: forking a large Node process costs milliseconds, a connection does not.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { constants } from 'node:os';
import { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { BoxProcess, ProcessExit } from '../driver.js';
import type { RuntimeLogger } from './logger.js';
import { native } from './paths.js';

const CHUNK = 65536;
const signalNames = new Map<number, NodeJS.Signals>(
  Object.entries(constants.signals).map(([name, num]) => [num, name as NodeJS.Signals]),
);

function frame(type: string, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.allocUnsafe(5);
  header[0] = type.charCodeAt(0);
  header.writeUInt32LE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

export class ExecDaemon {
  private child: ChildProcess | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    readonly socketPath: string,
    private readonly log: RuntimeLogger,
  ) {}

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null && !this.starting;
  }

  /** Starts the daemon (again, if it died); resolves once it listens. */
  start(): Promise<void> {
    this.starting ??= new Promise<void>((resolve, reject) => {
      const child = spawn(native.boxexecd, [this.socketPath], { stdio: ['ignore', 'pipe', 'pipe'], env: {} });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      createInterface({ input: child.stdout }).once('line', () => {
        this.child = child;
        child.unref();
        for (const s of [child.stdout, child.stderr]) (s as unknown as { unref?: () => void }).unref?.();
        resolve();
      });
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        if (this.child === child) this.log.warn({ code, signal, stderr: err.trim() }, 'boxexecd exited');
        reject(new Error(`boxexecd ended (${code ?? signal}): ${err.trim()}`));
      });
    }).finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  stop(): void {
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }

  /**
   * Runs boxexec arguments (everything after the program name) through the daemon; with `boxinit`,
   * runs native/boxinit with these arguments instead (box creation).
   */
  exec(args: string[], what: 'boxexec' | 'boxinit' = 'boxexec'): BoxProcess {
    if (args.some((a) => a.includes('\0'))) throw new TypeError('arguments and environment must not contain NUL bytes');
    const sock = connect(this.socketPath);
    let exit: ProcessExit | undefined;
    let failure: Error | undefined;
    const stdout = new Readable({ read: () => void sock.resume() });
    const stderr = new Readable({ read: () => void sock.resume() });
    const stdin = new Writable({
      write(chunk: Buffer, _enc, cb) {
        if (sock.destroyed) return cb();
        for (let off = 0; off < chunk.length; off += CHUNK) {
          const last = off + CHUNK >= chunk.length;
          sock.write(frame('I', chunk.subarray(off, off + CHUNK)), last ? () => cb() : undefined);
        }
      },
      final(cb) {
        if (sock.destroyed) return cb();
        sock.write(frame('E'), () => cb());
      },
    });
    sock.write(frame(what === 'boxexec' ? 'R' : 'B', Buffer.from(args.join('\0'))));

    let pending: Buffer | undefined;
    sock.on('data', (data: Buffer) => {
      let buf = pending ? Buffer.concat([pending, data]) : data;
      while (buf.length >= 5) {
        const len = buf.readUInt32LE(1);
        if (buf.length < 5 + len) break;
        const type = String.fromCharCode(buf[0]!);
        const payload = buf.subarray(5, 5 + len);
        buf = buf.subarray(5 + len);
        if (type === '1' && !stdout.push(payload)) sock.pause();
        else if (type === '2' && !stderr.push(payload)) sock.pause();
        else if (type === 'X') {
          const code = payload.readInt32LE(0);
          const sig = payload.readInt32LE(4);
          exit = { exitCode: code >= 0 ? code : null, signal: sig ? (signalNames.get(sig) ?? 'SIGKILL') : null };
          resolveExit(exit);
        }
      }
      pending = buf.length > 0 ? Buffer.from(buf) : undefined;
    });
    let resolveExit!: (e: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
    sock.on('error', (err) => (failure = err));
    sock.on('close', () => {
      if (!exit) {
        stderr.push(`devboxd: the command's connection ended early${failure ? `: ${failure.message}` : ''}\n`);
        resolveExit({ exitCode: 125, signal: null });
      }
      stdout.push(null);
      stderr.push(null);
      stdin.destroy();
    });
    stdin.on('error', () => undefined);
    return {
      stdin,
      stdout,
      stderr,
      exited,
      signal(sig, group) {
        const num = constants.signals[sig];
        if (num === undefined || exit || sock.destroyed) return;
        sock.write(frame('K', Buffer.from([num, group ? 1 : 0])));
      },
    };
  }
}
