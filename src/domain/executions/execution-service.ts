import { EventEmitter } from 'node:events';
import path from 'node:path';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { BoxProcess, Sandbox } from '../../runtime/driver.js';
import type { ExecutionStore } from '../../store/types.js';
import type { DevboxService } from '../devboxes/devbox-service.js';
import type { BoxProcessHooks } from '../devboxes/hooks.js';
import { TERMINAL, type Devbox } from '../devboxes/types.js';
import { ERRORS } from '../errors.js';
import type { DevboxLog } from './devbox-log.js';
import { droppedMarker, REMOVED_MARKER, STREAM_CHUNK, tailLines, utf8Prefix, utf8Start } from './output.js';
import type { BoxLookup, OutputBudget } from './output-budget.js';
import { SegmentReader, streamSizeSync } from './output-segments.js';
import { OutputWriter } from './output-writer.js';
import { pumpOutput } from './process-run.js';
import { commandArgv, SerialQueues } from './shell.js';
import { sourceOf, type Execution, type ExecutionKind, type ExecutionStatus, type LogEntry, type LogEntryInput, type LogFilter, type OutputStream } from './types.js';

/** Longest command: it travels as one argv string, which Linux caps at 128 KiB (MAX_ARG_STRLEN). */
export const MAX_COMMAND_BYTES = 120_000;

/** Exit status of an execution ended by a kill or by its box stopping (128 + SIGKILL, as a shell says). */
export const KILLED_STATUS = 137;

export interface StartInput {
  command: string;
  commandId?: string | null;
  shellName?: string | null;
  attachStdin?: boolean;
}

export interface OutputTail {
  text: string;
  truncated: boolean;
  /** The output was removed (its box ended, or the box's output budget evicted it): `text` says so. */
  removed?: true;
}

export interface ExecutionOutput {
  stdout: OutputTail;
  stderr: OutputTail;
}

export interface OutputChunk {
  output: string;
  /** Byte position just after this chunk in the stream. */
  offset: number;
}

type StdinOp = { text: string } | { eof: true };

/** An execution this process runs (queued or running): the in-memory side of its record. */
interface Live {
  exec: Execution;
  files: Record<OutputStream, OutputWriter> | null;
  /** Settles once the output files are closed (after completion). */
  closed: Promise<void>;
  proc: BoxProcess | null;
  attachStdin: boolean;
  /** stdin sent before the process started (a named shell's queue). */
  stdinOps: StdinOp[];
  busy: boolean;
  /** Not in the store yet: it starts at once, and its first write (with the start entry) inserts it. */
  unsaved: boolean;
  /** Bumped on every change (bytes, status): followers compare it to know whether to wait. */
  version: number;
  stoppedWithBox: boolean;
  /** The record's writes, chained so they land in order (insert before updates). */
  writes: Promise<void>;
  done: Promise<void>;
  resolveDone: () => void;
}

/**
 * Runs commands in devboxes: API executions, launch commands and entrypoints. The record of each lives in
 * the store, its output in two files under `<dataDir>/executions/<devbox>/`, and the in-memory `live` map
 * holds what only a running process has (pipes, byte counts). Changes are announced on an emitter keyed by
 * execution id, which wakes long-polls and output streams.
 */
export class ExecutionService implements BoxProcessHooks {
  private readonly live = new Map<string, Live>();
  private readonly changes = new EventEmitter().setMaxListeners(0);
  private readonly shells = new SerialQueues();

  constructor(
    private readonly store: ExecutionStore,
    private readonly devboxLog: DevboxLog,
    private readonly devboxes: DevboxService,
    private readonly outputs: OutputBudget,
    private readonly boxState: BoxLookup,
    private readonly log: Logger,
    /** DEVBOXD_NODE_NAME: reconcile ends only the executions of this server's boxes. */
    private readonly node?: string,
    /** Executions (queued on a shell or running) one devbox holds at once. */
    private readonly maxPerDevbox = 256,
  ) {}

  /** At start: executions a previous server process left unfinished end now, their outcome unknown. */
  async reconcile(): Promise<void> {
    for (const e of await this.store.listUnfinished(this.node)) {
      e.stdoutBytes = streamSizeSync(this.outputPath(e.devboxId, e.id, 'stdout'));
      e.stderrBytes = streamSizeSync(this.outputPath(e.devboxId, e.id, 'stderr'));
      e.status = 'completed';
      e.endTimeMs = Date.now();
      await this.store.update(e);
      this.devboxLog.write({
        ...this.logBase(e),
        level: 'warn',
        message: 'devboxd restarted while this command ran; its exit status is unknown',
      });
    }
  }

  /** At start, once devboxes are reconciled: output of boxes that ended goes (after the retention period). */
  reconcileOutput(): Promise<void> {
    return this.outputs.reconcile(this.boxState);
  }

  /** Starts a command (or returns the execution an earlier request with the same command_id started). */
  async start(accountId: string, devboxId: string, input: StartInput): Promise<Execution> {
    await this.devboxes.get(accountId, devboxId);
    if (input.commandId != null) {
      if (input.commandId === '') throw ERRORS.invalid('command_id must not be empty');
      const prior = await this.findByCommandId(devboxId, input.commandId);
      if (prior) return prior;
    }
    const { devbox, sandbox } = await this.devboxes.requireRunning(accountId, devboxId);
    // A same command_id started while we awaited: it is live by now.
    if (input.commandId != null) {
      const prior = this.liveByCommandId(devboxId, input.commandId);
      if (prior) return prior;
    }
    if (Buffer.byteLength(input.command) > MAX_COMMAND_BYTES) {
      throw ERRORS.invalid(`command is longer than ${MAX_COMMAND_BYTES} bytes; upload a script and run that instead`);
    }
    let held = 0;
    for (const l of this.live.values()) if (l.exec.devboxId === devboxId && l.exec.kind === 'exec' && l.exec.status !== 'completed') held++;
    if (held >= this.maxPerDevbox) {
      throw ERRORS.busy(`devbox ${devboxId} runs ${held} executions, the most it runs at once (DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX); wait for one to finish`);
    }
    const e = this.newExecution(devbox, input.command, 'exec', input.shellName ?? null, input.commandId ?? null);
    this.launch(devbox, sandbox, e, input.attachStdin ?? false);
    return e;
  }

  /** The execution a command_id already named on this box: a live one not yet recorded counts too. */
  private async findByCommandId(devboxId: string, commandId: string): Promise<Execution | undefined> {
    const live = this.liveByCommandId(devboxId, commandId);
    if (live) return live;
    const stored = await this.store.findByCommandId(devboxId, commandId);
    return stored && this.current(stored);
  }

  private liveByCommandId(devboxId: string, commandId: string): Execution | undefined {
    for (const live of this.live.values()) {
      if (live.exec.devboxId === devboxId && live.exec.commandId === commandId) return live.exec;
    }
    return undefined;
  }

  async get(accountId: string, devboxId: string, id: string): Promise<Execution> {
    await this.devboxes.get(accountId, devboxId);
    const live = this.live.get(id);
    if (live && live.exec.devboxId === devboxId) return live.exec;
    const e = await this.store.get(devboxId, id);
    if (!e) throw ERRORS.notFound('execution', id);
    return e;
  }

  /** The last `lastN` lines of each stream (what the views carry). */
  async output(e: Execution, lastN: number): Promise<ExecutionOutput> {
    const bytes = this.bytesOf(e);
    const [stdout, stderr] = await Promise.all([
      tailLines(this.outputPath(e.devboxId, e.id, 'stdout'), bytes.stdout, lastN),
      tailLines(this.outputPath(e.devboxId, e.id, 'stderr'), bytes.stderr, lastN),
    ]);
    return { stdout, stderr };
  }

  /** Resolves with the execution once it is in one of `statuses`, or null when the hold ends first. */
  async waitFor(
    accountId: string,
    devboxId: string,
    id: string,
    statuses: ExecutionStatus[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Execution | null> {
    const first = await this.get(accountId, devboxId, id);
    if (statuses.includes(first.status)) return first;
    if (signal?.aborted) return null;
    // Changed while we read the first copy: no event is left to wake us, and the live copy says so.
    const latest = this.live.get(id)?.exec;
    if (latest && statuses.includes(latest.status)) return latest;
    return new Promise((resolve) => {
      const done = (e: Execution | null) => {
        this.changes.off(id, check);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(e);
      };
      const check = () => {
        // A change event comes from the live copy; once it is gone the record is final (and stored).
        const live = this.live.get(id)?.exec;
        if (live) {
          if (statuses.includes(live.status)) done(live);
          return;
        }
        this.store.get(devboxId, id).then(
          (e) => (e && statuses.includes(e.status) ? done(e) : undefined),
          (err) => this.log.error({ err, execution: id }, 'execution re-read failed'),
        );
      };
      const onAbort = () => done(null);
      const timer = setTimeout(onAbort, timeoutMs);
      this.changes.on(id, check);
      signal?.addEventListener('abort', onAbort);
    });
  }

  /** SIGKILL to the command (or its whole process group); resolves once it is completed (≤ 5 s). */
  async kill(accountId: string, devboxId: string, id: string, group: boolean): Promise<Execution> {
    const e = await this.get(accountId, devboxId, id);
    const live = this.live.get(id);
    if (e.status === 'completed' || !live) return e;
    if (!live.proc) {
      await this.finish(live, KILLED_STATUS);
      return live.exec;
    }
    live.proc.signal('SIGKILL', group);
    return (await this.waitFor(accountId, devboxId, id, ['completed'], 5000)) ?? this.get(accountId, devboxId, id);
  }

  /** Writes text to the command's stdin, closes it (EOF), or interrupts the command's process group. */
  async sendStdin(accountId: string, devboxId: string, id: string, input: { text?: string | null; signal?: 'EOF' | 'INTERRUPT' | null }): Promise<Execution> {
    const e = await this.get(accountId, devboxId, id);
    const live = this.live.get(id);
    if (e.status === 'completed' || !live) throw ERRORS.executionCompleted(id);
    if (input.signal === 'INTERRUPT') {
      if (live.proc) live.proc.signal('SIGINT', true);
      else await this.finish(live, 130);
      return live.exec;
    }
    if (!live.attachStdin && (input.text || input.signal === 'EOF')) {
      throw ERRORS.stdinNotAttached(id);
    }
    if (input.text) this.stdin(live, { text: input.text });
    if (input.signal === 'EOF') this.stdin(live, { eof: true });
    return live.exec;
  }

  /**
   * One output stream from byte `offset`: what is kept on disk, then new bytes as they land, until the
   * execution completed and everything was read. Chunks end on UTF-8 character boundaries. A position in a
   * dropped range gets a marker chunk whose offset is where kept bytes resume; removed output gets a marker.
   */
  async *follow(devboxId: string, id: string, stream: OutputStream, offset: number, signal: AbortSignal): AsyncGenerator<OutputChunk> {
    let pos = offset;
    let resumed = false;
    const reader = new SegmentReader(this.outputPath(devboxId, id, stream));
    try {
      while (!signal.aborted) {
        const live = this.live.get(id);
        const version = live?.version ?? -1;
        const e = live?.exec ?? (await this.store.get(devboxId, id));
        if (!e) return;
        const bytes = this.bytesOf(e)[stream];
        // Not live means nothing will write to it any more, whatever the record says.
        const final = e.status === 'completed' || !live;
        if (pos < bytes) {
          const got = await reader.read(pos, bytes, STREAM_CHUNK);
          if ('gone' in got) {
            yield { output: REMOVED_MARKER, offset: bytes };
            return;
          }
          if ('resumeAt' in got) {
            yield { output: droppedMarker(got.resumeAt - pos), offset: got.resumeAt };
            pos = got.resumeAt;
            resumed = true;
            continue;
          }
          let buf = got.bytes;
          if (resumed) {
            // Kept bytes may resume inside a character: start at the next whole one.
            const skip = utf8Start(buf, 0);
            pos += skip;
            buf = buf.subarray(skip);
            resumed = skip === got.bytes.length;
          }
          const cut = final && pos + buf.length >= bytes ? buf.length : utf8Prefix(buf, buf.length);
          if (cut > 0) {
            pos += cut;
            yield { output: buf.toString('utf8', 0, cut), offset: pos };
            continue;
          }
          if (buf.length < got.bytes.length) continue;
        }
        if (final) return;
        await this.changed(id, version, signal);
      }
    } finally {
      await reader.close();
    }
  }

  /** The devbox log, filtered; an execution id the devbox does not know is a 404, not an empty list. */
  async logs(accountId: string, devboxId: string, filter: LogFilter): Promise<LogEntry[]> {
    await this.devboxes.get(accountId, devboxId);
    if (filter.executionId) await this.get(accountId, devboxId, filter.executionId);
    await this.devboxLog.flush();
    return this.devboxLog.list(devboxId, filter);
  }

  /**
   * The devbox log from its start, then live, both filtered; ends once the devbox is terminal and everything
   * was sent. Unknown devbox or execution ids throw here, before anything streams.
   */
  async tailLogs(accountId: string, devboxId: string, filter: LogFilter, signal: AbortSignal): Promise<AsyncGenerator<LogEntry>> {
    await this.devboxes.get(accountId, devboxId);
    if (filter.executionId) await this.get(accountId, devboxId, filter.executionId);
    await this.devboxLog.flush();
    const isOver = async () => {
      const d = await this.devboxes.get(accountId, devboxId);
      return TERMINAL.has(d.status);
    };
    return this.devboxLog.follow(devboxId, filter, isOver, signal);
  }

  // --- BoxProcessHooks ---

  async runLaunchCommands(devbox: Devbox, sandbox: Sandbox): Promise<string | null> {
    for (const command of devbox.sandbox.launch.launchCommands) {
      const live = this.launch(devbox, sandbox, this.newExecution(devbox, command, 'launch', null, null), false);
      await live.done;
      const { exitStatus } = live.exec;
      if (live.stoppedWithBox) return `launch command "${command}" did not finish: the devbox stopped`;
      if (exitStatus !== 0) {
        const { stderr } = await this.output(live.exec, 1);
        const last = stderr.text.trim();
        return `launch command "${command}" exited with ${exitStatus ?? 'no status'}${last ? `: ${last}` : ''}`;
      }
    }
    return null;
  }

  startEntrypoint(devbox: Devbox, sandbox: Sandbox, onExit: (exitCode: number | null) => void): void {
    if (!devbox.entrypoint) return;
    const live = this.launch(devbox, sandbox, this.newExecution(devbox, devbox.entrypoint, 'entrypoint', null, null), false);
    void live.done.then(() => {
      if (!live.stoppedWithBox) onExit(live.exec.exitStatus);
    });
  }

  onBoxStopped(devboxId: string): void {
    const closing: Promise<void>[] = [];
    for (const live of [...this.live.values()]) {
      if (live.exec.devboxId !== devboxId) continue;
      live.stoppedWithBox = true;
      // Its synchronous start closes the files (live.closed) before the record is written.
      void this.finish(live, KILLED_STATUS);
      closing.push(live.closed);
    }
    // Ended (not suspended): the box's output goes with it, once its files are closed.
    void this.boxState(devboxId).then(
      (box) => (box?.ended ? this.outputs.boxEnded(devboxId, box.endTimeMs ?? Date.now(), Promise.all(closing)) : undefined),
      (err) => this.log.error({ err, devbox: devboxId }, 'could not read the box that stopped'),
    );
  }

  // --- internals ---

  private newExecution(devbox: Devbox, command: string, kind: ExecutionKind, shellName: string | null, commandId: string | null): Execution {
    return {
      id: newId('exe'),
      accountId: devbox.accountId,
      devboxId: devbox.id,
      command,
      commandId,
      shellName,
      kind,
      status: 'queued',
      exitStatus: null,
      createTimeMs: Date.now(),
      endTimeMs: null,
      stdoutBytes: 0,
      stderrBytes: 0,
    };
  }

  /** Records the execution and runs it now, or after the commands queued on its named shell. */
  private launch(devbox: Devbox, sandbox: Sandbox, e: Execution, attachStdin: boolean): Live {
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const live: Live = { exec: e, files: null, closed: Promise.resolve(), proc: null, attachStdin, stdinOps: [], busy: false, unsaved: true, version: 0, stoppedWithBox: false, writes: Promise.resolve(), done, resolveDone };
    const shellKey = e.shellName === null ? null : `${e.devboxId}\0${e.shellName}`;
    const waits = shellKey !== null && this.shells.busy(shellKey);
    this.live.set(e.id, live);
    if (waits) void this.persist(live);
    const run = () =>
      this.run(live, devbox, sandbox).catch((err) => {
        this.log.error({ err, execution: e.id }, 'execution failed to run');
        return this.finish(live, null);
      });
    if (shellKey === null) void run();
    else this.shells.enqueue(shellKey, run);
    return live;
  }

  private async run(live: Live, devbox: Devbox, sandbox: Sandbox): Promise<void> {
    const e = live.exec;
    if (e.status === 'completed') return; // killed while queued, or the box stopped
    this.outputs.prepare(e.devboxId);
    const account = this.outputs.account(e.devboxId);
    const writer = (stream: OutputStream) =>
      new OutputWriter(this.outputPath(e.devboxId, e.id, stream), this.outputs.segmentBytes, this.outputs.limits.streamMaxBytes, account);
    live.files = { stdout: writer('stdout'), stderr: writer('stderr') };
    e.status = 'running';
    if (e.kind !== 'entrypoint') {
      this.devboxes.busy(e.devboxId, 1);
      live.busy = true;
    }
    let proc: BoxProcess;
    try {
      proc = sandbox.spawn({ argv: commandArgv(e.command, e.shellName), env: devbox.environment });
    } catch (err) {
      await live.files.stderr.write(Buffer.from(`devboxd: could not start the command: ${(err as Error).message}\n`));
      await this.finish(live, 127);
      return;
    }
    live.proc = proc;
    // Recorded once the process is on its way: the write overlaps the command's start-up.
    void this.persist(live, { ...this.logBase(e), level: 'info' });
    this.bump(live);
    if (live.attachStdin) for (const op of live.stdinOps.splice(0)) this.stdin(live, op);
    else proc.stdin.end();
    const exitStatus = await pumpOutput(proc, live.files, {
      onOutput: () => this.bump(live),
      onLine: (stream, line) =>
        this.devboxLog.line({ ...this.logBase(e), cmd: null, level: stream === 'stderr' ? 'error' : 'info', message: line }),
    });
    await this.finish(live, exitStatus);
  }

  private stdin(live: Live, op: StdinOp): void {
    const proc = live.proc;
    if (!proc) {
      live.stdinOps.push(op);
      return;
    }
    if (proc.stdin.writableEnded || proc.stdin.destroyed) return;
    if ('text' in op) proc.stdin.write(op.text);
    else proc.stdin.end();
  }

  /** Completes the execution (once): final sizes and status to the store, exit to the log, waiters woken. */
  private async finish(live: Live, exitStatus: number | null): Promise<void> {
    const e = live.exec;
    if (e.status === 'completed') return;
    if (live.files) {
      const { stdout, stderr } = live.files;
      e.stdoutBytes = stdout.bytes;
      e.stderrBytes = stderr.bytes;
      live.closed = Promise.all([stdout.close(), stderr.close()]).then(() => {
        const kept = stdout.bytes - stdout.dropped + stderr.bytes - stderr.dropped;
        if (kept > 0) this.outputs.finished(e.devboxId, e.id, kept, [...stdout.keptPaths(), ...stderr.keptPaths()]);
      });
    }
    live.proc?.stdin.destroy();
    e.status = 'completed';
    e.exitStatus = exitStatus;
    e.endTimeMs = Date.now();
    // The live copy (completed already) answers reads until the record is stored; then it goes. finish runs
    // on error paths too: a failing write is logged by persist, and the waiters are still woken below.
    await this.persist(live, { ...this.logBase(e), level: exitStatus === 0 ? 'info' : 'error', exitCode: exitStatus });
    if (live.busy) this.devboxes.busy(e.devboxId, -1);
    live.busy = false;
    this.live.delete(e.id);
    this.bump(live);
    live.resolveDone();
  }

  /** Queues a write of the record as it is now (insert the first time), and the log entry after it. */
  private persist(live: Live, entry?: LogEntryInput): Promise<void> {
    const e = { ...live.exec };
    const insert = live.unsaved;
    live.unsaved = false;
    live.writes = live.writes
      .then(() => (insert ? this.store.insert(e) : this.store.update(e)))
      .catch((err) => this.log.error({ err, execution: e.id }, 'could not record an execution'));
    if (entry) this.devboxLog.write(entry);
    return live.writes;
  }

  private bump(live: Live): void {
    live.version++;
    this.changes.emit(live.exec.id);
  }

  /** Resolves when the execution changed after `version` (at once if it already did), or on abort. */
  private changed(id: string, version: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const live = this.live.get(id);
      if (!live || live.version !== version || signal.aborted) return resolve();
      const done = () => {
        this.changes.off(id, done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.changes.on(id, done);
      signal.addEventListener('abort', done);
    });
  }

  /** The freshest copy of a record: the live one while it runs. */
  private current(e: Execution): Execution {
    return this.live.get(e.id)?.exec ?? e;
  }

  private bytesOf(e: Execution): Record<OutputStream, number> {
    const files = this.live.get(e.id)?.files;
    return files ? { stdout: files.stdout.bytes, stderr: files.stderr.bytes } : { stdout: e.stdoutBytes, stderr: e.stderrBytes };
  }

  private outputPath(devboxId: string, id: string, stream: OutputStream): string {
    return path.join(this.outputs.dirOf(devboxId), `${id}.${stream}`);
  }

  private logBase(e: Execution) {
    return { devboxId: e.devboxId, timestampMs: Date.now(), source: sourceOf(e.kind), cmd: e.command, cmdId: e.id, shellName: e.shellName };
  }
}
