/**
 * A layer as one stream, to move it between nodes (RuntimeDriver.exportLayer / importLayer):
 *
 *   "DBXLAYR1" | u32 BE M | M bytes of marks | zstd of a tar | "DBXLEND1" | u64 BE N | sha256 of the first N bytes
 *
 * - marks: the directories overlayfs marks opaque, NUL-ended paths relative to the layer (`layertar marks`).
 *   overlayfs keeps them in trusted xattrs, which neither end's confined tar may read or write.
 * - the tar: `layertar pack`, GNU tar reading the layer confined: POSIX format, owners as box ids, modes,
 *   times, user and security xattrs, ACLs, hard links, the holes of sparse files, and whiteouts as the 0/0
 *   character devices they are. A disk layer (`<id>.img`) goes as the files of its writable layer, not as its
 *   filesystem image: the receiving kernel then never mounts an ext4 image that came over the network.
 * - zstd -1: a layer of code, packages and binaries shrinks several times at a few hundred MB/s a core,
 *   which the blob store's bandwidth and bill gain back.
 * - the trailer: an archive cut short or changed on the way never unpacks into a layer.
 *
 * Import treats the stream as hostile: tenant code wrote the files. The marks are checked (relative paths,
 * bounded); zstd runs as nobody; `layertar unpack` bounds the tar in bytes (and keeps the data dir's free
 * room), unpacks it confined to the new layer's directory, refuses devices other than whiteouts and marks
 * only directories reached without following a symlink. Only the compressed bytes pass through this
 * process, each way: the tar goes between tar and zstd by their own pipe.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SandboxError } from '../driver.js';
import { native } from './paths.js';

const HEAD = Buffer.from('DBXLAYR1');
const TAIL = Buffer.from('DBXLEND1');
const TRAILER_BYTES = TAIL.length + 8 + 32;
/** Largest marks section (as layertar's MAX_MARKS): 16 MiB is some 200 000 opaque directories. */
const MAX_MARKS = 16 * 2 ** 20;
/** The unprivileged user the decompressor runs as. */
const NOBODY = 65_534;

export interface ImportLimits {
  /** Largest tar (once decompressed) an import takes: what the layer may hold, plus its headers. */
  maxBytes: number;
  /** Free bytes the data dir keeps: an import that would take them fails. */
  minFreeBytes: number;
}

/** Imports may make layers as large as the largest box disk the API allows (4096 GiB). */
export const DEFAULT_IMPORT_LIMITS: ImportLimits = { maxBytes: 4100 * 2 ** 30, minFreeBytes: 2 ** 30 };

/** A child's end: rejects with what it said on stderr (`said`, also read after a kill) when it fails. */
function ended(child: ChildProcess, what: string): { done: Promise<void>; said: () => string } {
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  const said = () => err.trim().split('\n').slice(-3).join('; ');
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', (e) => reject(new SandboxError('failed', `${what}: ${e.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new SandboxError('failed', `${what}: ${said() || `ended with ${code ?? signal}`}`));
    });
  });
  done.catch(() => undefined);
  return { done, said };
}

async function opaqueMarks(dir: string): Promise<Buffer> {
  const child = spawn(native.layertar, ['marks', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const { done } = ended(child, "listing the layer's opaque directories failed");
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
    n += chunk.length;
    if (n > MAX_MARKS) {
      child.kill('SIGKILL');
      throw new SandboxError('failed', `the layer has more opaque directories than an archive carries (${MAX_MARKS} bytes of paths)`);
    }
    parts.push(chunk);
  }
  await done;
  return Buffer.concat(parts);
}

/**
 * The archive of the layer directory `dir`. The marks are listed before this resolves (a layer an archive
 * cannot carry rejects here); the tar runs while the stream is read, with its mount root on `stage` (a path
 * that does not exist, removed after). The trailer comes only once tar and zstd ended well, so a failure
 * mid-way is an error of the stream and, for a reader that ignores it, an archive no import takes.
 */
export async function packLayer(dir: string, stage: string): Promise<Readable> {
  const marks = await opaqueMarks(dir);
  async function* archive(): AsyncGenerator<Buffer> {
    const hash = createHash('sha256');
    let n = 0;
    const counted = (b: Buffer): Buffer => {
      hash.update(b);
      n += b.length;
      return b;
    };
    const head = Buffer.alloc(HEAD.length + 4);
    HEAD.copy(head);
    head.writeUInt32BE(marks.length, HEAD.length);
    yield counted(head);
    if (marks.length) yield counted(marks);
    const tar = spawn(native.layertar, ['pack', dir, stage], { stdio: ['ignore', 'pipe', 'pipe'] });
    // The tar goes from tar to zstd by their own pipe: only the compressed bytes pass through this process.
    const z = spawn('zstd', ['-1', '-T0', '-q', '-c'], { cwd: '/', stdio: [tar.stdout!, 'pipe', 'pipe'], uid: NOBODY, gid: NOBODY });
    tar.stdout!.destroy();
    const done = Promise.all([ended(tar, 'packing the layer failed').done, ended(z, 'compressing the layer failed').done]);
    done.catch(() => undefined);
    try {
      for await (const chunk of z.stdout as AsyncIterable<Buffer>) yield counted(chunk);
      await done;
      const tail = Buffer.alloc(TRAILER_BYTES);
      TAIL.copy(tail);
      tail.writeBigUInt64BE(BigInt(n), TAIL.length);
      hash.digest().copy(tail, TAIL.length + 8);
      yield tail;
    } finally {
      tar.kill('SIGKILL');
      z.kill('SIGKILL');
      await rm(stage, { recursive: true, force: true }).catch(() => undefined);
    }
  }
  return Readable.from(archive(), { objectMode: false });
}

/** Reads exact byte counts from the front of a stream, hashing them; `rest` streams what is left. */
class Front {
  private readonly it: AsyncIterator<Buffer>;
  private held: Buffer[] = [];
  private heldBytes = 0;
  n = 0;

  constructor(
    body: Readable,
    readonly hash: Hash,
  ) {
    this.it = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  async take(want: number): Promise<Buffer> {
    while (this.heldBytes < want) {
      const r = await this.it.next();
      if (r.done) throw new SandboxError('failed', 'the layer archive ends early');
      this.held.push(r.value);
      this.heldBytes += r.value.length;
    }
    const all = Buffer.concat(this.held);
    const out = all.subarray(0, want);
    this.held = all.length > want ? [all.subarray(want)] : [];
    this.heldBytes = all.length - want;
    this.hash.update(out);
    this.n += want;
    return out;
  }

  rest(): Readable {
    const self = this;
    async function* gen(): AsyncGenerator<Buffer> {
      yield* self.held;
      self.held = [];
      for (let r = await self.it.next(); !r.done; r = await self.it.next()) yield r.value;
    }
    return Readable.from(gen(), { objectMode: false });
  }
}

/** The marks section, checked: NUL-ended relative paths of plain components. */
function checkMarks(marks: Buffer): void {
  if (!marks.length) return;
  if (marks.at(-1) !== 0) throw new SandboxError('failed', "the layer archive's marks do not end in a NUL");
  for (const path of marks.subarray(0, -1).toString('latin1').split('\0')) {
    const parts = path.split('/');
    if (path === '.') continue;
    if (!path || path.length >= 4096 || parts.some((p) => p === '' || p === '.' || p === '..')) {
      throw new SandboxError('failed', `the layer archive marks a path no layer has: ${JSON.stringify(path.slice(0, 200))}`);
    }
  }
}

/** Passes all but the trailer on, hashing it; at the end checks the trailer against what passed. */
function trailerCheck(hash: Hash, before: number): Transform {
  let tail = Buffer.alloc(0);
  let n = before;
  const pass = (b: Buffer, t: Transform) => {
    if (!b.length) return;
    hash.update(b);
    n += b.length;
    t.push(b);
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      // The last TRAILER_BYTES seen are held back: they may be the trailer.
      const all = chunk.length >= TRAILER_BYTES ? null : Buffer.concat([tail, chunk]);
      if (all) {
        const keep = Math.max(0, all.length - TRAILER_BYTES);
        pass(all.subarray(0, keep), this);
        tail = Buffer.from(all.subarray(keep));
      } else {
        pass(tail, this);
        pass(chunk.subarray(0, chunk.length - TRAILER_BYTES), this);
        tail = Buffer.from(chunk.subarray(chunk.length - TRAILER_BYTES));
      }
      cb();
    },
    flush(cb) {
      const ok =
        tail.length === TRAILER_BYTES &&
        tail.subarray(0, TAIL.length).equals(TAIL) &&
        tail.readBigUInt64BE(TAIL.length) === BigInt(n) &&
        tail.subarray(TAIL.length + 8).equals(hash.digest());
      cb(ok ? null : new SandboxError('failed', 'the layer archive is cut short or damaged (its trailer does not match its bytes)'));
    },
  });
}

/**
 * Unpacks an archive `packLayer` made into `dir`, an empty directory (its siblings `<dir>.marks` and
 * `<dir>.stage` are made and removed). Rejects when the archive is damaged, too large or refused; `dir` is
 * then the caller's to remove, and is never a layer.
 */
export async function unpackLayer(body: Readable, dir: string, limits: ImportLimits): Promise<void> {
  const front = new Front(body, createHash('sha256'));
  const head = await front.take(HEAD.length + 4);
  if (!head.subarray(0, HEAD.length).equals(HEAD)) throw new SandboxError('failed', 'not a layer archive (or one of a later format)');
  const size = head.readUInt32BE(HEAD.length);
  if (size > MAX_MARKS) throw new SandboxError('failed', `the layer archive's marks are ${size} bytes (at most ${MAX_MARKS})`);
  const marks = await front.take(size);
  checkMarks(marks);
  const marksFile = `${dir}.marks`;
  await writeFile(marksFile, marks, { mode: 0o600 });
  const z = spawn('zstd', ['-d', '-c', '-q'], { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'], uid: NOBODY, gid: NOBODY });
  const unzipped = ended(z, 'the layer archive is not valid zstd');
  // zstd's output goes straight to layertar, which bounds it: the tar never passes through this process.
  const bounds = [String(limits.maxBytes), String(limits.minFreeBytes)];
  const child = spawn(native.layertar, ['unpack', dir, marksFile, ...bounds], { stdio: [z.stdout!, 'ignore', 'pipe'] });
  z.stdout!.destroy();
  const unpacked = ended(child, 'the layer archive was refused');
  const feed = pipeline(front.rest(), trailerCheck(front.hash, front.n), z.stdin!);
  const stop = () => {
    z.kill('SIGKILL');
    child.kill('SIGKILL');
  };
  feed.catch(stop);
  try {
    await Promise.all([feed, unzipped.done, unpacked.done]);
  } catch (err) {
    stop();
    const [, , tar] = await Promise.allSettled([feed, unzipped.done, unpacked.done]);
    // The unpacker's own refusal (its bound, an entry: it said why) is the reason; zstd dying of the pipe it
    // closed is not, nor the unpacker killed by stop() after another part failed.
    if (tar.status === 'rejected' && unpacked.said() && tar.reason instanceof SandboxError) throw tar.reason;
    if (err instanceof SandboxError) throw err;
    // A helper that gave up first (tar refusing an entry) broke the pipe: what it said is the reason.
    if (unpacked.said()) throw new SandboxError('failed', `the layer archive was refused: ${unpacked.said()}`);
    if (unzipped.said()) throw new SandboxError('failed', `the layer archive is not valid zstd: ${unzipped.said()}`);
    throw new SandboxError('failed', `the layer archive could not be unpacked: ${(err as Error).message}`);
  } finally {
    await rm(marksFile, { force: true });
    await rm(`${dir}.stage`, { recursive: true, force: true }).catch(() => undefined);
  }
}
