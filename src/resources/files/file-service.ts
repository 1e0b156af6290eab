import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DomainError, ERRORS } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { BoxProcess, ProcessExit } from '../../runtime/driver.js';
import type { DevboxService } from '../devboxes/index.js';
import { firstByte, hasData } from './box-io.js';
import { EXIT, READ_SCRIPT, READY, READY_IN_PLACE, TOKEN_LENGTH, WRITE_SCRIPT } from './box-scripts.js';
import { BoxWrite, type PendingWrite } from './box-write.js';
import { checkPath } from './paths.js';

export type { PendingWrite } from './box-write.js';

const STDERR_KEEP = 4096;

/** A file being read out of a box: `stream` carries its bytes; `done` settles when the transfer ends. */
export interface FileDownload {
  stream: Readable;
  done: Promise<void>;
}

/** Which transfer a box process serves: the error messages name it. */
interface Target {
  accountId: string;
  id: string;
  path: string;
  what: 'write' | 'read' | 'move';
}

/** A box process past its path checks (READY seen), with what it wrote to stderr so far. */
interface Opened {
  proc: BoxProcess;
  ready: string;
  failure: (exit: ProcessExit) => Promise<DomainError>;
  /** Releases the abort listener and the box's busy mark. */
  close: () => void;
}

/**
 * Files in and out of a running box, streamed through a process in the box (never through host paths), with
 * back-pressure both ways so memory does not grow with the file. Path problems are found before a byte of
 * content moves: missing → 404, directory → 400, permission denied → 403, empty path → 400. Writes land in a
 * temporary file renamed over the destination once complete (see WRITE_SCRIPT); a transfer cut by the box
 * stopping is a 409.
 */
export class FileService {
  /** Writes in flight per devbox, so a suspend can end them cleanly before it stops the box. */
  private readonly writes = new Map<string, Set<PendingWrite>>();

  constructor(
    private readonly devboxes: DevboxService,
    private readonly log: Logger,
    /** stallMs: how long an upload's client may send nothing while the server waits for its bytes. */
    readonly limits: { stallMs: number } = { stallMs: 60_000 },
  ) {}

  /** Writes `source` to `path` (relative to the home directory), creating parent directories. */
  async write(accountId: string, id: string, path: string, source: Readable | Buffer | string, signal?: AbortSignal): Promise<void> {
    const w = await this.begin(accountId, id, path, typeof source === 'string' ? Buffer.from(source) : source, signal);
    await w.commit();
  }

  /**
   * Streams `source` into a temporary file next to `path`; resolves once every byte is in the box, with
   * the write still pending: `commit` renames it into place, `abort` removes it.
   */
  async begin(accountId: string, id: string, path: string, source: Readable | Buffer, signal?: AbortSignal): Promise<PendingWrite> {
    const w = await this.openWrite({ accountId, id, path, what: 'write' }, [], signal);
    await w.receive(source, () => ERRORS.invalid(`the upload of ${path} was cut off before its end; the file is unchanged`));
    return w;
  }

  /** A name in the home directory for an upload whose path arrives after its bytes (see `place`). */
  stagingName(): string {
    return `.upload.devboxd-${randomBytes(8).toString('hex')}`;
  }

  /** Moves a committed staging file to `path`, as atomically as a write (the staging file goes either way). */
  async place(accountId: string, id: string, staged: string, path: string): Promise<void> {
    const w = await this.openWrite({ accountId, id, path, what: 'move' }, [staged]);
    await w.commit();
  }

  /** Ends every write in flight on a box (before a suspend stops it): their temporary files go, no file changes. */
  async stopWrites(id: string): Promise<void> {
    await Promise.all([...(this.writes.get(id) ?? [])].map((w) => w.abort()));
  }

  /**
   * Opens `path` for reading. Resolves once the path checks passed and the first bytes are there (so the
   * caller can still answer with an error status); the bytes then flow through `stream` as fast as the
   * reader takes them.
   */
  async read(accountId: string, id: string, path: string, signal?: AbortSignal): Promise<FileDownload> {
    const opened = await this.open({ accountId, id, path, what: 'read' }, READ_SCRIPT, [path], signal, 'SIGKILL');
    const stream = opened.proc.stdout;
    // A reader that goes away (client disconnect) ends the box process too.
    stream.once('close', () => {
      if (!stream.readableEnded) opened.proc.signal('SIGKILL', true);
    });
    if (!(await hasData(stream))) {
      const exit = await opened.proc.exited;
      if (exit.exitCode !== 0) {
        opened.close();
        throw await opened.failure(exit);
      }
    }
    const done = opened.proc.exited.then(async (exit) => {
      opened.close();
      if (exit.exitCode === 0) return;
      const err = await opened.failure(exit);
      // A failure mid-file must not look like a complete (short) file to the reader.
      if (!stream.readableEnded) stream.destroy(err);
      throw err;
    });
    done.catch(() => undefined);
    return { stream, done };
  }

  private async openWrite(t: Target, staged: string[], signal?: AbortSignal): Promise<BoxWrite> {
    const token = randomBytes(TOKEN_LENGTH / 2).toString('hex');
    const args = [t.path, randomBytes(8).toString('hex'), token, ...staged];
    const opened = await this.open(t, WRITE_SCRIPT, args, signal, 'SIGTERM');
    const set = this.writes.get(t.id) ?? new Set<PendingWrite>();
    this.writes.set(t.id, set);
    const w: BoxWrite = new BoxWrite({
      proc: opened.proc,
      atomic: opened.ready === READY,
      token,
      failure: opened.failure,
      release: () => {
        opened.close();
        set.delete(w);
        if (set.size === 0 && this.writes.get(t.id) === set) this.writes.delete(t.id);
      },
    });
    set.add(w);
    opened.proc.stdout.resume();
    if (staged.length > 0) opened.proc.stdin.end();
    return w;
  }

  /** Starts `script` in the box and waits for its READY byte (path checks passed) or its exit (they failed). */
  private async open(t: Target, script: string, args: string[], signal: AbortSignal | undefined, stopWith: NodeJS.Signals): Promise<Opened> {
    checkPath(t.path, 'path');
    const { sandbox } = await this.devboxes.requireRunning(t.accountId, t.id);
    if (signal?.aborted) throw ERRORS.invalid('the client went away');
    let proc: BoxProcess;
    try {
      proc = sandbox.spawn({ argv: ['sh', '-c', script, 'sh', ...args] });
    } catch (err) {
      throw ERRORS.conflict(`devbox ${t.id} is not running: ${(err as Error).message}`);
    }
    this.devboxes.busy(t.id, 1);
    const onAbort = () => proc.signal(stopWith, true);
    signal?.addEventListener('abort', onAbort, { once: true });
    let stderr = '';
    proc.stderr.on('data', (c: Buffer) => {
      if (stderr.length < STDERR_KEEP) stderr += c.toString('utf8');
    });
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      signal?.removeEventListener('abort', onAbort);
      this.devboxes.busy(t.id, -1);
    };
    // A client that went away ended the process itself: its choice, answered (and logged) as a 4xx, not a fault.
    const failure = async (exit: ProcessExit) =>
      signal?.aborted ? ERRORS.invalid(`the client went away during the ${t.what} of ${t.path}`) : this.failure(t, exit.exitCode, stderr);
    const ready = await firstByte(proc.stdout);
    if (ready !== READY && ready !== READY_IN_PLACE) {
      close();
      proc.stdin.destroy();
      throw await failure(await proc.exited);
    }
    return { proc, ready, failure, close };
  }

  private async failure(t: Target, code: number | null, stderr: string): Promise<DomainError> {
    const { path, what } = t;
    switch (code) {
      case EXIT.notFound:
        return ERRORS.fileNotFound(path);
      case EXIT.isDirectory:
        return ERRORS.notAFile(`${path} is a directory`);
      case EXIT.denied:
        return ERRORS.permissionDenied(path);
      case EXIT.empty:
        return ERRORS.invalid('path must not be empty');
      case EXIT.parentNotDirectory:
        return ERRORS.notAFile(`cannot create ${path}: a parent is not a directory`);
      case EXIT.notRegular:
        return ERRORS.notAFile(`${path} is not a regular file`);
    }
    const status = (await this.devboxes.get(t.accountId, t.id)).status;
    if (status !== 'running') return ERRORS.conflict(`the devbox stopped (it is ${status}) during the ${what} of ${path}`);
    if (code === EXIT.cut) return ERRORS.invalid(`the upload of ${path} was cut off before its end; the file is unchanged`);
    const detail = stderr.trim().split('\n').slice(-3).join('; ') || (code === null ? 'the process was killed' : `exit status ${code}`);
    const known = fromErrno(detail, path, what);
    if (known) return known;
    this.log.warn({ path, code, stderr: detail }, `file ${what} failed`);
    return new DomainError('internal', `${what} of ${path} failed: ${detail}`, false);
  }
}

/** strerror texts of open/read/write refused by a device, socket or kernel file (ENXIO, ENODEV, ENOTTY, EINVAL, EIO, EBUSY, ...). */
const NOT_A_FILE_ERRNO =
  /no such device|inappropriate ioctl|invalid argument|input\/output error|resource busy|text file busy|operation not supported|no such process|bad address|illegal seek|broken pipe/i;

/** Maps the message of a failed system call (as coreutils print it) to the answer a client can act on. */
function fromErrno(detail: string, path: string, what: string): DomainError | null {
  if (/no space left|quota exceeded/i.test(detail)) return ERRORS.tooLarge(`${what} of ${path} failed: the devbox disk is full`);
  if (/permission denied|operation not permitted|read-only file system/i.test(detail)) return ERRORS.permissionDenied(path);
  if (/file name too long/i.test(detail))
    return ERRORS.invalid(`path ${path} is too long for the devbox (a name or the resolved path exceeds the kernel limit)`);
  if (/too many levels of symbolic links/i.test(detail)) return ERRORS.invalid(`path ${path} has too many levels of symbolic links`);
  if (/not a directory/i.test(detail)) return ERRORS.notAFile(`cannot use ${path}: a parent is not a directory`);
  if (/is a directory/i.test(detail)) return ERRORS.notAFile(`${path} is a directory`);
  if (/no such file/i.test(detail)) return ERRORS.fileNotFound(path);
  // What the path names (a device, a socket, a file of /proc or /sys) refuses the operation: the path's fault.
  if (NOT_A_FILE_ERRNO.test(detail)) return ERRORS.notAFile(`cannot ${what} ${path}: ${detail.replace(/^.*: /, '')} (it is not a regular file)`);
  return null;
}
