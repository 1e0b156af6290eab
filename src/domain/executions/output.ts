import fs from 'node:fs';
import { open } from 'node:fs/promises';

/** Largest piece of output a view carries (last_n lines are cut to it): keeps JSON answers bounded. */
export const MAX_VIEW_BYTES = 1024 * 1024;
const STREAM_CHUNK = 256 * 1024;
/** Reads up to this size are done synchronously (see readRange). */
const SYNC_READ_MAX = 64 * 1024;

/**
 * One output stream of an execution, appended to a file as it arrives. Writes are synchronous: the page
 * cache absorbs them in microseconds, nothing is buffered in memory, and the pipe is read no faster than
 * the file is written (back-pressure for free). A write error (ENOSPC...) stops recording, never the command.
 */
export class OutputFile {
  bytes: number;
  private fd: number | null;
  failed: Error | null = null;

  constructor(readonly path: string) {
    this.fd = fs.openSync(path, 'a', 0o600); // a tenant's output: root only
    this.bytes = fs.fstatSync(this.fd).size;
  }

  write(chunk: Buffer): void {
    if (this.fd === null || this.failed) return;
    try {
      let done = 0;
      while (done < chunk.length) done += fs.writeSync(this.fd, chunk, done, chunk.length - done);
      this.bytes += chunk.length;
    } catch (err) {
      this.failed = err as Error;
    }
  }

  close(): void {
    if (this.fd === null) return;
    fs.closeSync(this.fd);
    this.fd = null;
  }
}

/** Length of the longest prefix of `buf[0, len)` that ends on a UTF-8 character boundary. */
export function utf8Prefix(buf: Buffer, len: number): number {
  // Look back at most 3 bytes for the lead byte of a sequence that may be incomplete.
  for (let i = len - 1, back = 0; i >= 0 && back < 4; i--, back++) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return len - i >= need ? len : i;
  }
  return len; // not UTF-8 (a run of continuation bytes): send as is
}

/** First character boundary at or after `pos` in `buf`. */
function utf8Start(buf: Buffer, pos: number): number {
  while (pos < buf.length && (buf[pos]! & 0xc0) === 0x80) pos++;
  return pos;
}

/**
 * The last `n` lines of a file of `size` bytes, read from its end (the file is never read whole), cut to
 * MAX_VIEW_BYTES. `truncated` is true when anything before them was left out.
 */
export async function tailLines(path: string, size: number, n: number): Promise<{ text: string; truncated: boolean }> {
  if (size <= 0) return { text: '', truncated: false };
  if (n <= 0) return { text: '', truncated: true };
  const limit = Math.min(size, MAX_VIEW_BYTES);
  const from = size - limit;
  const data = await readRange(path, from, limit);
  if (!data) return { text: '', truncated: false };
  // A trailing newline ends the last line; it does not start another one.
  let newlines = data[data.length - 1] === 10 ? -1 : 0;
  let start = -1;
  for (let i = data.length - 1; i >= 0; i--) {
    if (data[i] === 10 && ++newlines === n) {
      start = i + 1;
      break;
    }
  }
  if (start >= 0) return { text: data.toString('utf8', start), truncated: true };
  if (from === 0) return { text: data.toString('utf8'), truncated: false };
  return { text: data.toString('utf8', utf8Start(data, 0)), truncated: true };
}

/**
 * `len` bytes of a file from `from`, or null when it cannot be opened. Small reads (most command output) are
 * synchronous: from the page cache they take microseconds, less than a trip through libuv's thread pool.
 */
async function readRange(path: string, from: number, len: number): Promise<Buffer | null> {
  const buf = Buffer.allocUnsafe(len);
  if (len <= SYNC_READ_MAX) {
    let fd: number;
    try {
      fd = fs.openSync(path, 'r');
    } catch {
      return null;
    }
    try {
      return buf.subarray(0, fs.readSync(fd, buf, 0, len, from));
    } finally {
      fs.closeSync(fd);
    }
  }
  const fh = await open(path, 'r').catch(() => null);
  if (!fh) return null;
  try {
    const { bytesRead } = await fh.read(buf, 0, len, from);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Reads output from byte `pos` to at most `end`, as a string cut on a character boundary unless `final`. */
export async function readChunk(
  fh: import('node:fs/promises').FileHandle,
  pos: number,
  end: number,
  final: boolean,
  max = STREAM_CHUNK,
): Promise<{ text: string; bytes: number }> {
  const len = Math.min(max, end - pos);
  const buf = Buffer.allocUnsafe(len);
  const { bytesRead } = await fh.read(buf, 0, len, pos);
  const reachesEnd = pos + bytesRead >= end;
  const cut = final && reachesEnd ? bytesRead : utf8Prefix(buf, bytesRead);
  return { text: buf.toString('utf8', 0, cut), bytes: cut };
}
