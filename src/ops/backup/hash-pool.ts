/**
 * sha256 on every core. Node hashes on the thread that calls it, and a backup of hard-linked layers is nothing
 * but hashing (about 600 MiB/s on one core here): a worker per core reads and hashes a file at a time. The
 * workers' code is a string (a worker of its own file would need an entry of its own in the bundle); it is the
 * plain reading loop of digest.ts's two file digests and needs nothing but Node.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';

/** What a worker is asked: a file's sha256, or its chunk digest over the chunk indices given (digest.ts). */
export type HashJob = { kind: 'sha256'; file: string } | { kind: 'chunks'; file: string; chunks: number[]; size: number; chunk: number };

const SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const { createHash } = require('node:crypto');
const BLOCK = 1 << 20;
const buf = Buffer.alloc(BLOCK);
function sha256(file) {
  const hash = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, BLOCK, null)) > 0; ) hash.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}
function chunks(job) {
  const hash = createHash('sha256');
  const chunk = Buffer.alloc(job.chunk);
  const zero = Buffer.alloc(job.chunk);
  const index = Buffer.alloc(8);
  const fd = fs.openSync(job.file, 'r');
  try {
    for (const i of job.chunks) {
      const n = fs.readSync(fd, chunk, 0, job.chunk, i * job.chunk);
      if (chunk.subarray(0, n).equals(zero.subarray(0, n))) continue;
      index.writeBigUInt64BE(BigInt(i));
      hash.update(index).update(chunk.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  index.writeBigUInt64BE(BigInt(job.size));
  return hash.update('size').update(index).digest('hex');
}
parentPort.on('message', ({ id, job }) => {
  try {
    parentPort.postMessage({ id, sum: job.kind === 'sha256' ? sha256(job.file) : chunks(job) });
  } catch (err) {
    parentPort.postMessage({ id, error: err.message, code: err.code });
  }
});
`;

interface Pending {
  resolve(sum: string): void;
  reject(err: Error): void;
}

const pending = new Map<number, Pending>();
const queue: { id: number; job: HashJob }[] = [];
const idle: Worker[] = [];
let workers: Worker[] = [];
let nextId = 0;
let stopTimer: NodeJS.Timeout | undefined;
/** How long the pool outlives its last job: a backup hashes file after file, and a start costs ~30 ms a worker. */
const LINGER_MS = 200;

function start(): void {
  for (let i = 0; i < Math.max(1, os.availableParallelism()); i++) {
    const w = new Worker(SOURCE, { eval: true });
    w.on('message', (m: { id: number; sum?: string; error?: string; code?: string }) => {
      const p = pending.get(m.id)!;
      pending.delete(m.id);
      if (m.sum !== undefined) p.resolve(m.sum);
      else p.reject(Object.assign(new Error(m.error), { code: m.code }));
      next(w);
    });
    w.on('error', (err) => {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    });
    workers.push(w);
    idle.push(w);
  }
}

function next(w: Worker): void {
  const task = queue.shift();
  if (task) return void w.postMessage(task);
  idle.push(w);
  if (pending.size === 0) stopTimer = setTimeout(stop, LINGER_MS);
}

/**
 * Ends the workers once nothing is asked of them for a moment, so a command or a test ends when its work does.
 * (Unref'd workers did not do it: on Node 20 a worker once ref'd again keeps its message port holding the
 * process open after unref.)
 */
function stop(): void {
  for (const w of workers) void w.terminate();
  workers = [];
  idle.length = 0;
}

/** The job's digest, from the first worker free. */
export function hashInWorker(job: HashJob): Promise<string> {
  clearTimeout(stopTimer);
  if (workers.length === 0) start();
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    queue.push({ id, job });
    const w = idle.pop();
    if (w) next(w);
  });
}
