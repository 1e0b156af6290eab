import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../platform/config-error.js';
import type { AuditShipping } from './config.js';

/** Where JSON lines of the audit trail are shipped: it takes one batch (whole lines) at a time. */
export interface LineSink {
  /** Writes the lines; false when they were dropped (the stream is backed up), throws when the write failed. */
  write(lines: string): Promise<boolean>;
  close(): Promise<void>;
}

/** Bytes stdout may hold unread (a stalled log collector) before further lines are dropped, not buffered. */
const STDOUT_BACKLOG = 8 * 1024 * 1024;

/**
 * The sink DEVBOXD_AUDIT_LOG names (undefined for none), opened now so that a path the server cannot write
 * stops the start, naming it. A relative path is under `dataDir`.
 */
export async function openLineSink(shipping: AuditShipping, dataDir: string): Promise<LineSink | undefined> {
  if (shipping.kind === 'none') return undefined;
  if (shipping.kind === 'stdout') {
    return {
      write: async (lines) => process.stdout.writableLength <= STDOUT_BACKLOG && (process.stdout.write(lines), true),
      close: async () => undefined,
    };
  }
  const file = new FileSink(path.resolve(dataDir, shipping.path));
  try {
    await file.open();
  } catch (err) {
    throw new ConfigError(`DEVBOXD_AUDIT_LOG: cannot append to ${file.path}: ${(err as Error).message}`);
  }
  return file;
}

/**
 * A file appended to (O_APPEND, so a truncation by `logrotate copytruncate` is safe too). Before each write
 * the path is looked up again: when it names another file than the one open (logrotate renamed it and
 * perhaps made a new one) or none, the file is opened afresh, as Python's WatchedFileHandler does. So
 * rotation needs no signal, which matters under DEVBOXD_ROLE=all, where the API server is a child process.
 */
class FileSink implements LineSink {
  private fh: fs.promises.FileHandle | undefined;
  private ino = 0;
  private dev = 0;

  constructor(readonly path: string) {}

  async open(): Promise<void> {
    await fs.promises.mkdir(path.dirname(this.path), { recursive: true, mode: 0o700 });
    const fh = await fs.promises.open(this.path, 'a', 0o640);
    const st = await fh.stat();
    await this.fh?.close().catch(() => undefined);
    [this.fh, this.ino, this.dev] = [fh, st.ino, st.dev];
  }

  async write(lines: string): Promise<boolean> {
    const st = await fs.promises.stat(this.path).catch(() => undefined);
    if (!this.fh || !st || st.ino !== this.ino || st.dev !== this.dev) await this.open();
    await this.fh!.write(lines);
    return true;
  }

  async close(): Promise<void> {
    await this.fh?.close();
    this.fh = undefined;
  }
}
