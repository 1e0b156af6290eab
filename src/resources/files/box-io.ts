import type { Readable } from 'node:stream';
import type { BoxProcess } from '../../runtime/driver.js';

/** HTTP/2 delivers 16 KiB frames; fewer, larger writes into the box cost far less. */
const BATCH = 256 * 1024;

/** Reads exactly one byte (as a string) from `stream`, leaving the rest unread; null if it ends first. */
export function firstByte(stream: Readable): Promise<string | null> {
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
 * Resolves once `stream` holds data (true) or reached its end (false), consuming nothing: a download answers
 * only once its first bytes are there, so a failure before them still gets a proper status.
 */
export function hasData(stream: Readable): Promise<boolean> {
  if (stream.readableLength > 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const finish = () => {
      stream.off('readable', finish);
      stream.off('close', finish);
      stream.off('error', finish);
      resolve(stream.readableLength > 0);
    };
    stream.on('readable', finish);
    stream.once('close', finish);
    stream.once('error', finish);
  });
}

/**
 * Copies `source` into the process's stdin with back-pressure, batched into writes of at least BATCH bytes.
 * A batch is written corked, so it leaves as one writev of the chunks as they came (no copy into a joined
 * buffer). Resolves when the source ended with every byte handed to stdin, which stays open (the caller
 * decides how the write ends), or when the process is gone first. Rejects when the source fails or closes
 * before its end (client gone).
 */
export function pump(source: Readable | Buffer, proc: BoxProcess): Promise<void> {
  const stdin = proc.stdin;
  if (Buffer.isBuffer(source)) {
    return new Promise((resolve) => {
      if (source.length === 0) return resolve();
      stdin.write(source, () => resolve());
      void proc.exited.then(() => resolve());
    });
  }
  // The source may have failed while the box process started (a multipart body that ended early).
  if (source.destroyed) return Promise.reject(source.errored ?? new Error('the upload was cut off'));
  return new Promise((resolve, reject) => {
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
    source.once('error', (err) => settle(err));
    source.once('close', () => {
      if (!source.readableEnded) settle(new Error('the upload was cut off'));
    });
    source.once('end', () => {
      if (settled) return;
      flush();
      settle();
    });
    // A process that is gone first settles the copy; the caller then reports why it ended.
    void proc.exited.then(() => settle());
    source.on('data', onData);
  });
}
