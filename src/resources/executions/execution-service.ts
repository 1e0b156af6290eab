import type { Logger } from '../../lib/logger.js';
import type { ExecutionStore } from './execution-store.js';
import type { DevboxService } from '../devboxes/index.js';
import type { BoxProcessHooks } from '../devboxes/index.js';
import { TERMINAL } from '../devboxes/index.js';
import { ERRORS } from '../../platform/errors.js';
import type { BoxJobs, OutputChunk, OutputTail } from './box-jobs.js';
import type { DevboxLog } from './devbox-log.js';
import { ExecutionRunner, KILLED_STATUS } from './execution-runner.js';
import type { BoxLookup } from './output-budget.js';
import type { Execution, ExecutionStatus, LogEntry, LogFilter, OutputStream } from './types.js';

export type { OutputChunk, OutputTail } from './box-jobs.js';
export { KILLED_STATUS } from './execution-runner.js';

/** Longest command: it travels as one argv string, which Linux caps at 128 KiB (MAX_ARG_STRLEN). */
export const MAX_COMMAND_BYTES = 120_000;

export interface StartInput {
  command: string;
  commandId?: string | null;
  shellName?: string | null;
  attachStdin?: boolean;
}

export interface ExecutionOutput {
  stdout: OutputTail;
  stderr: OutputTail;
}

/**
 * The executions API in domain terms (command ids, named shells, long-polls, stdin, output streams, the
 * devbox log); routes call one method each. Running them is the runner's (box jobs underneath): the record
 * of each lives in the store, its output in files under `<dataDir>/executions/<devbox>/`.
 */
export class ExecutionService {
  /** What the devbox lifecycle runs through its extension points: launch commands, entrypoint, box stop. */
  readonly processes: BoxProcessHooks;
  private readonly runner: ExecutionRunner;

  constructor(
    private readonly store: ExecutionStore,
    private readonly devboxLog: DevboxLog,
    private readonly devboxes: DevboxService,
    private readonly jobs: BoxJobs,
    private readonly boxState: BoxLookup,
    private readonly log: Logger,
    /** DEVBOXD_NODE_NAME: reconcile ends only the executions of this server's boxes. */
    node?: string,
    /** Executions (queued on a shell or running) one devbox holds at once. */
    private readonly maxPerDevbox = 256,
  ) {
    this.runner = new ExecutionRunner(store, devboxLog, devboxes, jobs, boxState, log, node);
    this.processes = this.runner;
  }

  /** At start: executions a previous server process left unfinished end now, their outcome unknown. */
  reconcile(): Promise<void> {
    return this.runner.reconcile();
  }

  /** At start, once devboxes are reconciled: output of boxes that ended goes (after the retention period). */
  reconcileOutput(): Promise<void> {
    return this.jobs.outputs.reconcile(this.boxState);
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
    const e = this.runner.newExecution(devbox, input.command, 'exec', input.shellName ?? null, input.commandId ?? null);
    this.runner.launch(devbox, sandbox, e, input.attachStdin ?? false);
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
    return this.jobs.tail(e.devboxId, e.id, this.bytesOf(e), lastN);
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
        unsubscribe();
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
      const unsubscribe = this.jobs.subscribe(id, check);
      signal?.addEventListener('abort', onAbort);
    });
  }

  /** SIGKILL to the command (or its whole process group); resolves once it is completed (≤ 5 s). */
  async kill(accountId: string, devboxId: string, id: string, group: boolean): Promise<Execution> {
    const e = await this.get(accountId, devboxId, id);
    const live = this.live.get(id);
    if (e.status === 'completed' || !live) return e;
    if (!live.job.signal('SIGKILL', group)) {
      await this.runner.finish(live, KILLED_STATUS);
      return live.exec;
    }
    return (await this.waitFor(accountId, devboxId, id, ['completed'], 5000)) ?? this.get(accountId, devboxId, id);
  }

  /** Writes text to the command's stdin, closes it (EOF), or interrupts the command's process group. */
  async sendStdin(accountId: string, devboxId: string, id: string, input: { text?: string | null; signal?: 'EOF' | 'INTERRUPT' | null }): Promise<Execution> {
    const e = await this.get(accountId, devboxId, id);
    const live = this.live.get(id);
    if (e.status === 'completed' || !live) throw ERRORS.executionCompleted(id);
    if (input.signal === 'INTERRUPT') {
      if (!live.job.signal('SIGINT', true)) await this.runner.finish(live, 130);
      return live.exec;
    }
    if (!live.attachStdin && (input.text || input.signal === 'EOF')) {
      throw ERRORS.stdinNotAttached(id);
    }
    if (input.text) live.job.stdin({ text: input.text });
    if (input.signal === 'EOF') live.job.stdin({ eof: true });
    return live.exec;
  }

  /**
   * One output stream from byte `offset`: what is kept on disk, then new bytes as they land, until the
   * execution completed and everything was read (see BoxJobs.follow).
   */
  follow(devboxId: string, id: string, stream: OutputStream, offset: number, signal: AbortSignal): AsyncGenerator<OutputChunk> {
    const state = async () => {
      const live = this.live.get(id);
      const version = live?.job.version ?? -1;
      const e = live?.exec ?? (await this.store.get(devboxId, id));
      // Not live means nothing will write to it any more, whatever the record says.
      return e && { bytes: this.bytesOf(e), final: e.status === 'completed' || !live, version };
    };
    const isCurrent = (version: number) => this.live.get(id)?.job.version === version;
    return this.jobs.follow(devboxId, id, stream, offset, signal, state, isCurrent);
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

  // --- internals ---

  private get live() {
    return this.runner.live;
  }

  /** The freshest copy of a record: the live one while it runs. */
  private current(e: Execution): Execution {
    return this.live.get(e.id)?.exec ?? e;
  }

  private bytesOf(e: Execution): Record<OutputStream, number> {
    return this.live.get(e.id)?.job.bytes() ?? { stdout: e.stdoutBytes, stderr: e.stderrBytes };
  }
}
