import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DomainError, ERRORS } from '../errors.js';
import type { Logger } from '../../lib/logger.js';
import type { BoxProcess, Sandbox } from '../../runtime/driver.js';
import type { DevboxService } from '../devboxes/devbox-service.js';
import { EXIT, MOVE_SCRIPT, READ_SCRIPT, READY, WRITE_SCRIPT } from './box-scripts.js';

const STDERR_KEEP = 4096;
/** PATH_MAX of Linux. */
const MAX_PATH = 4096;

/** A file being read out of a box: `stream` carries its bytes; `done` settles when the transfer ends. */
export interface FileDownload {
  stream: Readable;
  done: Promise<void>;
}

/** A box process past its path checks (READY seen), with what it wrote to stderr so far. */
interface Opened {
  proc: BoxProcess;
  stderr: () => string;
  /** Releases the abort listener and the box's busy mark. */
  close: () => void;
}

/**
 * Files in and out of a running box, streamed through a process in the box (never through host paths), with
 * back-pressure both ways so memory does not grow with the file. Path problems are found before a byte of
 * content moves: missing → 404, directory → 400, permission denied → 403, empty path → 400.
 */
export class FileService {
  constructor(
    private readonly devboxes: DevboxService,
    private readonly log: Logger,
  ) {}

  /** Writes `source` to `path` (relative to the home directory), creating parent directories. */
  async write(accountId: string, id: string, path: string, source: Readable | Buffer | string, signal?: AbortSignal): Promise<void> {
    const sandbox = await this.sandbox(accountId, id, path);
    const opened = await this.open(id, sandbox, WRITE_SCRIPT, [path], path, signal);
    try {
      opened.proc.stdout.resume();
      if (typeof source === 'string' || Buffer.isBuffer(source)) opened.proc.stdin.end(source);
      else await pump(source, opened.proc);
      await this.finished(opened, path, 'write');
    } catch (err) {
      opened.proc.signal('SIGKILL', true);
      throw err;
    } finally {
      opened.close();
    }
  }

  /**
   * Uploads whose path arrives after their bytes land in a staging file in the home directory first;
   * `place` then moves it where it belongs (or `discard` drops it).
   */
  async stage(accountId: string, id: string, source: Readable, signal?: AbortSignal): Promise<string> {
    const staged = `.devboxd-upload-${randomBytes(8).toString('hex')}`;
    await this.write(accountId, id, staged, source, signal);
    return staged;
  }

  async place(accountId: string, id: string, staged: string, path: string): Promise<void> {
    const sandbox = await this.sandbox(accountId, id, path);
    const opened = await this.open(id, sandbox, MOVE_SCRIPT, [staged, path], path);
    try {
      opened.proc.stdout.resume();
      await this.finished(opened, path, 'move');
    } finally {
      opened.close();
    }
  }

  async discard(accountId: string, id: string, staged: string): Promise<void> {
    const { sandbox } = await this.devboxes.requireRunning(accountId, id);
    const p = sandbox.spawn({ argv: ['rm', '-f', '--', staged] });
    p.stdin.end();
    p.stdout.resume();
    p.stderr.resume();
    await p.exited;
  }

  /**
   * Opens `path` for reading. Resolves once the path checks passed (so the caller can still answer with an
   * error status); the bytes then flow through `stream` as fast as the reader takes them.
   */
  async read(accountId: string, id: string, path: string, signal?: AbortSignal): Promise<FileDownload> {
    const sandbox = await this.sandbox(accountId, id, path);
    const opened = await this.open(id, sandbox, READ_SCRIPT, [path], path, signal);
    const stream = opened.proc.stdout;
    const done = this.finished(opened, path, 'read').then(
      () => opened.close(),
      (err: Error) => {
        opened.close();
        // A failure mid-file must not look like a complete (short) file to the reader.
        if (!stream.readableEnded) stream.destroy(err);
        throw err;
      },
    );
    done.catch(() => undefined);
    // A reader that goes away (client disconnect) ends the box process too.
    stream.once('close', () => {
      if (!stream.readableEnded) opened.proc.signal('SIGKILL', true);
    });
    return { stream, done };
  }

  /** Reads a whole file as UTF-8 text, refusing files over `maxBytes`. */
  async readText(accountId: string, id: string, path: string, maxBytes: number, signal?: AbortSignal): Promise<string> {
    const { stream, done } = await this.read(accountId, id, path, signal);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        stream.destroy();
        throw ERRORS.invalid(`${path} is larger than ${maxBytes} bytes; use download_file for large files`);
      }
      chunks.push(chunk);
    }
    await done;
    return Buffer.concat(chunks).toString('utf8');
  }

  private async sandbox(accountId: string, id: string, path: string): Promise<Sandbox> {
    const { sandbox } = await this.devboxes.requireRunning(accountId, id);
    if (path.length === 0) throw ERRORS.invalid('path must not be empty');
    if (path.includes('\0')) throw ERRORS.invalid('path must not contain NUL characters');
    if (path.length > MAX_PATH) throw ERRORS.invalid(`path is ${path.length} characters long; at most ${MAX_PATH} are allowed`);
    return sandbox;
  }

  /** Starts `script` in the box and waits for its READY byte (path checks passed) or its exit (they failed). */
  private async open(id: string, sandbox: Sandbox, script: string, args: string[], path: string, signal?: AbortSignal): Promise<Opened> {
    if (signal?.aborted) throw ERRORS.invalid('the client went away');
    let proc: BoxProcess;
    try {
      proc = sandbox.spawn({ argv: ['sh', '-c', script, 'sh', ...args] });
    } catch (err) {
      throw ERRORS.badState(`devbox ${id} is not running: ${(err as Error).message}`);
    }
    this.devboxes.busy(id, 1);
    const onAbort = () => proc.signal('SIGKILL', true);
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
      this.devboxes.busy(id, -1);
    };
    const ready = await firstByte(proc.stdout);
    if (ready !== READY) {
      close();
      proc.stdin.destroy();
      const exit = await proc.exited;
      throw this.failure(exit.exitCode, stderr, path, ready === null ? 'open' : 'start');
    }
    return { proc, stderr: () => stderr, close };
  }

  /** Waits for the process and turns a bad exit into a domain error. */
  private async finished(opened: Opened, path: string, what: string): Promise<void> {
    const exit = await opened.proc.exited;
    if (exit.exitCode !== 0) throw this.failure(exit.exitCode, opened.stderr(), path, what);
  }

  private failure(code: number | null, stderr: string, path: string, what: string): DomainError {
    switch (code) {
      case EXIT.notFound:
        return ERRORS.fileNotFound(path);
      case EXIT.isDirectory:
        return ERRORS.badState(`${path} is a directory`);
      case EXIT.denied:
        return ERRORS.forbidden(`permission denied: ${path}`);
      case EXIT.empty:
        return ERRORS.invalid('path must not be empty');
      case EXIT.parentNotDirectory:
        return ERRORS.badState(`cannot create ${path}: a parent is not a directory`);
      default: {
        const detail = stderr.trim().split('\n').slice(-3).join('; ') || (code === null ? 'the process was killed' : `exit status ${code}`);
        if (/no space left/i.test(detail)) return ERRORS.tooLarge(`${what} of ${path} failed: the devbox disk is full`);
        this.log.warn({ path, code, stderr: detail }, `file ${what} failed`);
        return new DomainError('internal', `${what} of ${path} failed: ${detail}`, false);
      }
    }
  }
}

/** Reads exactly one byte (as a string) from `stream`, leaving the rest unread; null if it ends first. */
function firstByte(stream: Readable): Promise<string | null> {
  return new Promise((resolve) => {
    const finish = (v: string | null) => {
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      stream.off('error', onEnd);
      resolve(v);
    };
    const onReadable = () => {
      const b = stream.read(1) as Buffer | null;
      if (b !== null) finish(b.toString('latin1'));
    };
    const onEnd = () => finish(null);
    stream.on('readable', onReadable);
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    stream.once('error', onEnd);
  });
}

/**
 * Copies `source` into the process's stdin with back-pressure, batched into writes of at least BATCH bytes
 * (HTTP/2 delivers 16 KiB frames; fewer, larger writes into the box cost far less). A batch is written
 * corked, so it leaves as one writev of the chunks as they came (no copy into a joined buffer). stdin is
 * closed only after the source ended cleanly: a source that fails (client gone) kills the process first, so
 * `cat` never sees an EOF for a transfer that did not finish. A process that dies early ends the copy.
 */
function pump(source: Readable, proc: BoxProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const stdin = proc.stdin;
    let parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const flush = (): boolean => {
      if (parts.length === 0) return true;
      let ok = true;
      stdin.cork();
      for (const part of parts) ok = stdin.write(part);
      stdin.uncork();
      parts = [];
      size = 0;
      return ok;
    };
    const onDrain = () => source.resume();
    const onData = (chunk: Buffer) => {
      parts.push(chunk);
      size += chunk.length;
      if (size >= BATCH && !flush()) {
        source.pause();
        stdin.once('drain', onDrain);
      }
    };
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      source.off('data', onData);
      stdin.off('drain', onDrain);
      source.pause();
      if (err) reject(err);
      else resolve();
    };
    const abort = (err: Error) => {
      proc.signal('SIGKILL', true);
      settle(err);
    };
    source.once('error', abort);
    source.once('close', () => {
      if (!source.readableEnded) abort(new Error('the upload was cut off'));
    });
    source.once('end', () => {
      if (settled) return;
      flush();
      stdin.end();
      settle();
    });
    // Settles the copy when the process is gone first; `finished` then reports why.
    void proc.exited.then(() => settle());
    source.on('data', onData);
  });
}

const BATCH = 256 * 1024;
