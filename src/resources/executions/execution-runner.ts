import { newId } from '../../lib/ids.js';
import { DomainError } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { ExecutionStore } from './execution-store.js';
import type { DevboxService } from '../devboxes/index.js';
import type { BoxProcessHooks } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import type { BoxJob } from './box-job.js';
import type { BoxJobs } from './box-jobs.js';
import type { DevboxLog } from './devbox-log.js';
import type { BoxLookup } from './output-budget.js';
import { commandArgv, SerialQueues } from './shell.js';
import { sourceOf, type Execution, type ExecutionKind, type LogEntryInput } from './types.js';

/** Exit status of an execution ended by a kill or by its box stopping (128 + SIGKILL, as a shell says). */
export const KILLED_STATUS = 137;

/** An execution this process runs (queued or running): its record and the box job that runs it. */
export interface Live {
  exec: Execution;
  job: BoxJob;
  attachStdin: boolean;
  busy: boolean;
  /** Not in the store yet: it starts at once, and its first write (with the start entry) inserts it. */
  unsaved: boolean;
  stoppedWithBox: boolean;
  done: Promise<void>;
  resolveDone: () => void;
}

/**
 * Runs executions (API commands, launch commands, entrypoints) as box jobs: queues them on named shells,
 * keeps their records in the store and their lines in the devbox log, and ends them with their box. The
 * in-memory `live` map answers for what only a running process knows (byte counts, status before it is
 * stored).
 */
export class ExecutionRunner implements BoxProcessHooks {
  readonly live = new Map<string, Live>();
  private readonly shells = new SerialQueues();

  constructor(
    private readonly store: ExecutionStore,
    private readonly devboxLog: DevboxLog,
    private readonly devboxes: DevboxService,
    readonly jobs: BoxJobs,
    private readonly boxState: BoxLookup,
    private readonly log: Logger,
    /** DEVBOXD_NODE_NAME: reconcile ends only the executions of this server's boxes. */
    private readonly node?: string,
  ) {}

  /**
   * At start, before anything runs: executions a previous server process left unfinished end now, their
   * outcome unknown, and output it left spooled is sealed into the blob store.
   */
  async reconcile(): Promise<void> {
    for (const e of await this.store.listUnfinished(this.node)) {
      const job = this.jobs.create(e.devboxId, e.id);
      e.stdoutBytes = await job.output('stdout').size();
      e.stderrBytes = await job.output('stderr').size();
      e.status = 'completed';
      e.endTimeMs = Date.now();
      await this.store.update(e);
      this.devboxLog.write({ ...logBase(e), level: 'warn', message: 'devboxd restarted while this command ran; its exit status is unknown' });
    }
    await this.jobs.outputs.storage.sealLeftovers();
  }

  newExecution(devbox: Devbox, command: string, kind: ExecutionKind, shellName: string | null, commandId: string | null): Execution {
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
  launch(devbox: Devbox, sandbox: Sandbox, e: Execution, attachStdin: boolean): Live {
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const job = this.jobs.create(e.devboxId, e.id);
    const live: Live = { exec: e, job, attachStdin, busy: false, unsaved: true, stoppedWithBox: false, done, resolveDone };
    const shellKey = e.shellName === null ? null : `${e.devboxId}\0${e.shellName}`;
    const waits = shellKey !== null && this.shells.busy(shellKey);
    this.live.set(e.id, live);
    if (waits) void this.persist(live);
    const run = () =>
      this.run(live, devbox, sandbox, attachStdin).catch((err) => {
        this.log.error({ err, execution: e.id }, 'execution failed to run');
        return this.finish(live, null);
      });
    if (shellKey === null) void run();
    else this.shells.enqueue(shellKey, run);
    return live;
  }

  private async run(live: Live, devbox: Devbox, sandbox: Sandbox, attachStdin: boolean): Promise<void> {
    const e = live.exec;
    const { env, argv } = await this.processOf(devbox, e);
    if (e.status === 'completed') return; // killed while queued, or the box stopped
    e.status = 'running';
    if (e.kind !== 'entrypoint') {
      this.devboxes.busy(e.devboxId, 1);
      live.busy = true;
    }
    const exitStatus = await live.job.run(sandbox, {
      argv,
      env,
      cwd: devbox.sandbox.cwd,
      attachStdin,
      // Recorded once the process is on its way: the write overlaps the command's start-up.
      onSpawned: () => void this.persist(live, { ...logBase(e), level: 'info' }),
      onLine: (stream, line) => this.devboxLog.line({ ...logBase(e), cmd: null, level: stream === 'stderr' ? 'error' : 'info', message: line }),
    });
    await this.finish(live, exitStatus);
  }

  /**
   * The command's argv and environment. What providers add (secrets) is never written to a named shell's
   * saved state. An environment that cannot be made (a bound secret that does not open, values over the
   * budget) starts no command: a stand-in prints the reason (names, never values) on stderr and exits 126.
   */
  private async processOf(devbox: Devbox, e: Execution): Promise<{ env: Record<string, string>; argv: string[] }> {
    try {
      const env = await this.devboxes.environmentOf(devbox);
      return {
        env,
        argv: commandArgv(
          e.command,
          e.shellName,
          Object.keys(env).filter((k) => !Object.hasOwn(devbox.environment, k)),
        ),
      };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      return { env: devbox.environment, argv: ['sh', '-c', 'printf "devboxd: %s\\n" "$1" >&2; exit 126', 'devboxd', err.message] };
    }
  }

  /** Completes the execution (once): final sizes and status to the store, exit to the log, waiters woken. */
  async finish(live: Live, exitStatus: number | null): Promise<void> {
    const e = live.exec;
    if (e.status === 'completed') return;
    const bytes = live.job.bytes();
    if (bytes) {
      e.stdoutBytes = bytes.stdout;
      e.stderrBytes = bytes.stderr;
    }
    live.job.complete(exitStatus);
    e.status = 'completed';
    e.exitStatus = exitStatus;
    e.endTimeMs = Date.now();
    // The live copy (completed already) answers reads until the record is stored; then it goes. finish runs
    // on error paths too: a failing write is logged by persist, and the waiters are still woken below.
    await this.persist(live, { ...logBase(e), level: exitStatus === 0 ? 'info' : 'error', exitCode: exitStatus });
    if (live.busy) this.devboxes.busy(e.devboxId, -1);
    live.busy = false;
    this.live.delete(e.id);
    live.job.bump();
    live.resolveDone();
  }

  /**
   * Queues a write of the record as it is now (insert the first time), with the log entry in its transaction.
   * All go through the devbox log's queue, so they land in order: the insert before updates, the start entry
   * before the command's lines, the exit entry after them.
   */
  private persist(live: Live, entry?: LogEntryInput): Promise<void> {
    const e = { ...live.exec };
    const insert = live.unsaved;
    live.unsaved = false;
    return this.devboxLog.writeWith(entry ?? null, { save: (batch) => this.store.save(e, insert, batch), about: { execution: e.id } });
  }

  // --- BoxProcessHooks ---

  async runLaunchCommands(devbox: Devbox, sandbox: Sandbox): Promise<string | null> {
    for (const command of devbox.sandbox.launch.launchCommands) {
      const live = this.launch(devbox, sandbox, this.newExecution(devbox, command, 'launch', null, null), false);
      await live.done;
      const { exitStatus } = live.exec;
      if (live.stoppedWithBox) return `launch command "${command}" did not finish: the devbox stopped`;
      if (exitStatus !== 0) {
        const { stderr } = await this.jobs.tail(devbox.id, live.exec.id, { stdout: live.exec.stdoutBytes, stderr: live.exec.stderrBytes }, 1);
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
      // Its synchronous start closes the files (job.closed) before the record is written.
      void this.finish(live, KILLED_STATUS);
      closing.push(live.job.closed);
    }
    // Ended (not suspended): the box's output goes with it, once its files are closed.
    void this.boxState(devboxId).then(
      (box) => (box?.ended ? this.jobs.outputs.boxEnded(devboxId, box.endTimeMs ?? Date.now(), Promise.all(closing)) : undefined),
      (err) => this.log.error({ err, devbox: devboxId }, 'could not read the box that stopped'),
    );
  }
}

export function logBase(e: Execution) {
  return { devboxId: e.devboxId, timestampMs: Date.now(), source: sourceOf(e.kind), cmd: e.command, cmdId: e.id, shellName: e.shellName };
}
