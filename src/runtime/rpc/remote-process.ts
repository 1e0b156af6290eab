/**
 * A process of a box on a node agent, as the API server sees it: a BoxProcess whose stdio and exit travel on
 * one Spawn call. Reading slowly pauses the call (so the agent stops reading the process's pipes); writing
 * into a process that does not read waits for the call to drain.
 */
import { Readable, Writable } from 'node:stream';
import type { BoxProcess, ProcessExit } from '../driver.js';
import type { Message, Stream } from './channel.js';
import { fromStatus } from './protocol.js';

export class RemoteProcess implements BoxProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly exited: Promise<ProcessExit>;
  readonly release?: () => void;
  readonly sent?: Promise<void>;
  private settle!: (exit: ProcessExit) => void;
  private settled = false;
  private finished = false;

  /** `onLost` hears why a call ended before the process did (the agent went away or lost the box). */
  constructor(
    private readonly call: Stream,
    opts: { held?: boolean; onLost?: (err: Error) => void; sent?: Promise<void> } = {},
  ) {
    this.exited = new Promise((resolve) => (this.settle = resolve));
    this.sent = opts.sent;
    // A read asks for more: the call flows again (Node asks before it takes the buffered bytes out, so the
    // buffer's length says nothing here). If the other stream is still full, its next push pauses it again.
    const resume = () => void call.resume();
    this.stdout = new Readable({ read: resume });
    this.stderr = new Readable({ read: resume });
    this.stdin = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        if (this.finished) return cb();
        if (call.write({ stdin: chunk })) cb();
        else call.once('drain', () => cb());
      },
      final: (cb) => {
        if (!this.finished) call.write({ stdin_end: {} });
        cb();
      },
    });
    if (opts.held) this.release = () => this.send({ release: {} });
    call.on('data', (msg: Message) => this.receive(msg));
    call.on('error', (err) => {
      const e = fromStatus(err as never);
      if (!this.settled) {
        opts.onLost?.(e);
        this.stderr.push(Buffer.from(`devboxd: the command's node agent connection ended: ${e.message}\n`));
      }
      this.end(125);
    });
    call.on('end', () => this.end(125));
  }

  private receive(msg: Message): void {
    switch (msg.kind) {
      case 'stdout':
        if (!this.outputEnded.has(this.stdout) && !this.stdout.push(msg.stdout as Buffer)) this.call.pause();
        return;
      case 'stderr':
        if (!this.outputEnded.has(this.stderr) && !this.stderr.push(msg.stderr as Buffer)) this.call.pause();
        return;
      case 'stdout_end':
        return this.endOutput(this.stdout);
      case 'stderr_end':
        return this.endOutput(this.stderr);
      case 'exit': {
        const e = msg.exit as { code: number; has_code: boolean; signal: string };
        this.settled = true;
        this.settle({ exitCode: e.has_code ? e.code : null, signal: (e.signal || null) as NodeJS.Signals | null });
      }
    }
  }

  /** The call is over: what was not said is said now (ends of output, an exit). */
  private end(code: number): void {
    this.finished = true;
    this.endOutput(this.stdout);
    this.endOutput(this.stderr);
    if (!this.settled) {
      this.settled = true;
      this.settle({ exitCode: code, signal: null });
    }
  }

  private readonly outputEnded = new Set<Readable>();
  private endOutput(s: Readable): void {
    if (this.outputEnded.has(s)) return;
    this.outputEnded.add(s);
    s.push(null);
  }

  private send(msg: Message): void {
    if (!this.finished) this.call.write(msg);
  }

  signal(sig: NodeJS.Signals, group: boolean | 'foreground'): void {
    this.send({ signal: { signal: sig, group: String(group) } });
  }

  resize(cols: number, rows: number): void {
    this.send({ resize: { cols, rows } });
  }

  close(): void {
    if (this.finished) return;
    this.call.write({ close: {} });
    this.call.end();
    this.stdin.destroy();
    if (!this.settled) {
      this.settled = true;
      // The agent closes the process (a terminal is hung up); its status is not waited for, as in process.
      this.settle({ exitCode: null, signal: 'SIGKILL' });
    }
    this.end(125);
  }
}
