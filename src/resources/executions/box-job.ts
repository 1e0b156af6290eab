import { EventEmitter } from 'node:events';
import type { BoxProcess, Sandbox } from '../../runtime/driver.js';
import type { OutputBudget } from './output-budget.js';
import type { StreamFiles } from './output-storage.js';
import { OutputWriter } from './output-writer.js';
import { pumpOutput } from './process-run.js';
import type { OutputStream } from './types.js';

export type StdinOp = { text: string } | { eof: true };

export interface BoxJobSpec {
  argv: string[];
  env: Record<string, string>;
  /** Working directory; absent: the user's home. */
  cwd?: string;
  /** Keep stdin open for `stdin()`; otherwise it is closed at start. */
  attachStdin?: boolean;
  /** The process is on its way (its output files are open). */
  onSpawned?(): void;
  /** A complete output line (capped per job), for a log. */
  onLine?(stream: OutputStream, line: string): void;
}

/**
 * One command run in a box: its process, its two output streams kept under the box's output budget (in
 * segments: spooled while written, blobs once sealed; see OutputStorage), its exit status, and a version bumped on every change (bytes,
 * status) that readers wait on. It knows nothing of the API's executions (command ids, shells, views):
 * executions, launch commands and entrypoints use it, and so can scorers, inspections and builds.
 */
export class BoxJob {
  status: 'queued' | 'running' | 'completed' = 'queued';
  exitStatus: number | null = null;
  version = 0;
  /** Settles once the output files are closed and sealed into the blob store (after completion). */
  closed: Promise<void> = Promise.resolve();
  private files: Record<OutputStream, OutputWriter> | null = null;
  private proc: BoxProcess | null = null;
  private readonly stdinOps: StdinOp[] = [];
  private attachStdin = false;

  constructor(
    readonly devboxId: string,
    readonly id: string,
    private readonly outputs: OutputBudget,
    private readonly changes: EventEmitter,
  ) {}

  /** Where one stream of the job's output lives. */
  output(stream: OutputStream): StreamFiles {
    return this.outputs.stream(this.devboxId, this.id, stream);
  }

  /** Bytes of each stream so far (dropped ones included), or null before the job ran. */
  bytes(): Record<OutputStream, number> | null {
    return this.files && { stdout: this.files.stdout.bytes, stderr: this.files.stderr.bytes };
  }

  get started(): boolean {
    return this.proc !== null;
  }

  /**
   * Opens the output files, spawns the command and pumps its output until it exits; resolves with its exit
   * status (127 if it could not start). The caller completes the job with it (`complete`).
   */
  async run(sandbox: Sandbox, spec: BoxJobSpec): Promise<number | null> {
    const loading = this.outputs.prepare(this.devboxId);
    if (loading) await loading;
    const account = this.outputs.account(this.devboxId);
    const writer = (stream: OutputStream) => new OutputWriter(this.output(stream), this.outputs.segmentBytes, this.outputs.limits.streamMaxBytes, account);
    const files = (this.files = { stdout: writer('stdout'), stderr: writer('stderr') });
    this.status = 'running';
    this.attachStdin = spec.attachStdin ?? false;
    let proc: BoxProcess;
    try {
      proc = sandbox.spawn({ argv: spec.argv, env: spec.env, cwd: spec.cwd });
    } catch (err) {
      await files.stderr.write(Buffer.from(`devboxd: could not start the command: ${(err as Error).message}\n`));
      return 127;
    }
    this.proc = proc;
    const { onSpawned } = spec;
    // After the start left: a process on a node agent starts only once its start message is written.
    if (onSpawned) void (proc.sent ?? Promise.resolve()).then(onSpawned);
    this.bump();
    if (this.attachStdin) for (const op of this.stdinOps.splice(0)) this.stdin(op);
    else proc.stdin.end();
    return pumpOutput(proc, files, { onOutput: () => this.bump(), onLine: (stream, line) => spec.onLine?.(stream, line) });
  }

  /** Text to stdin, or EOF; queued until the process starts. */
  stdin(op: StdinOp): void {
    const proc = this.proc;
    if (!proc) {
      this.stdinOps.push(op);
      return;
    }
    if (proc.stdin.writableEnded || proc.stdin.destroyed) return;
    if ('text' in op) proc.stdin.write(op.text);
    else proc.stdin.end();
  }

  /** Signals the process (or its process group); false when it has not started. */
  signal(sig: NodeJS.Signals, group: boolean): boolean {
    if (!this.proc) return false;
    this.proc.signal(sig, group);
    return true;
  }

  /**
   * Marks the job completed with `exitStatus` (once; false if it already was): closes its output files,
   * hands the kept bytes to the box's budget, cuts stdin. The caller announces the change (`bump`).
   */
  complete(exitStatus: number | null): boolean {
    if (this.status === 'completed') return false;
    const files = this.files;
    if (files) {
      const { stdout, stderr } = files;
      this.closed = Promise.all([stdout.close(), stderr.close()]).then(() => {
        const kept = stdout.bytes - stdout.dropped + stderr.bytes - stderr.dropped;
        const segments = [stdout, stderr].flatMap((w) => w.keptSegments().map((n) => ({ files: w.files, n })));
        if (kept > 0)
          this.outputs.finished(
            this.devboxId,
            this.id,
            kept,
            segments.sort((a, b) => a.n - b.n),
          );
      });
      this.outputs.closingStreams(this.devboxId, this.closed);
    }
    this.proc?.stdin.destroy();
    this.status = 'completed';
    this.exitStatus = exitStatus;
    return true;
  }

  /** Announces a change to whoever waits on this job's id. */
  bump(): void {
    this.version++;
    this.changes.emit(this.id);
  }
}
