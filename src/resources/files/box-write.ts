import type { Readable } from 'node:stream';
import { DomainError } from '../../platform/errors.js';
import type { BoxProcess, ProcessExit } from '../../runtime/driver.js';
import { pump } from './box-io.js';

/** How long a cancelled writer gets to remove its temporary file before it is killed. */
const CANCEL_GRACE_MS = 2000;

/** A write whose bytes go into the box but are not in place yet: `commit` puts them there, `abort` drops them. */
export interface PendingWrite {
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface WriteParts {
  proc: BoxProcess;
  /** False for a file written in place (no end token, not atomic; see WRITE_SCRIPT). */
  atomic: boolean;
  token: string;
  /** Turns a bad exit into the domain error the caller answers with. */
  failure: (exit: ProcessExit) => Promise<DomainError>;
  /** Runs once the process is gone: releases the busy mark and listeners. */
  release: () => void;
}

/**
 * One write script in a box, past its path checks. The bytes end with the end token only on `commit`, so
 * whatever else ends the write (abort, client gone, box stopped, server killed) leaves the destination as it
 * was: the script sees stdin end without the token, or gets SIGTERM, and removes its temporary file.
 */
export class BoxWrite implements PendingWrite {
  private exit: ProcessExit | null = null;
  private readonly exited: Promise<ProcessExit>;
  private ended = false;

  constructor(private readonly w: WriteParts) {
    this.exited = w.proc.exited.then((e) => {
      this.exit = e;
      w.release();
      return e;
    });
  }

  /** Streams `source` into the box; throws when the process ended first (path problem, disk full, box stopped). */
  async receive(source: Readable | Buffer, cutOff: () => DomainError): Promise<void> {
    try {
      await pump(source, this.w.proc);
    } catch (err) {
      await this.abort();
      throw err instanceof DomainError ? err : cutOff();
    }
    if (this.exit) throw await this.w.failure(this.exit);
  }

  async commit(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      this.w.proc.stdin.end(this.w.atomic ? this.w.token : undefined);
    }
    const exit = await this.exited;
    if (exit.exitCode !== 0) throw await this.w.failure(exit);
  }

  /** Ends the write without the token and waits until the process is gone (its temporary file with it). */
  async abort(): Promise<void> {
    if (this.exit) return;
    const { proc } = this.w;
    // The signal goes first: a file written in place must not see the end of stdin as the end of the upload.
    proc.signal('SIGTERM', true);
    if (!this.ended && this.w.atomic) {
      this.ended = true;
      proc.stdin.end();
    }
    const timer = setTimeout(() => proc.signal('SIGKILL', true), CANCEL_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }
}
