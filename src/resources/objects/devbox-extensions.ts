import { pipeline } from 'node:stream/promises';
import { DomainError, ERRORS } from '../../platform/errors.js';
import type { BoxProcess, Sandbox } from '../../runtime/driver.js';
import type { BootStep, CreateResolver } from '../devboxes/index.js';
import type { ObjectConfig } from './config.js';
import { EXIT_REFUSED, FILE_SCRIPT, UNPACK_SCRIPT } from './mount-scripts.js';
import type { ObjectService } from './object-service.js';
import type { StoredObject } from './types.js';

/** How an object lands in a box: as one file, or unpacked into a directory. */
type Placement = 'file' | 'tar' | 'zip';

/** Archives unpack: by content type (tar, tgz), by name (.tar, .tar.gz, .tgz, .zip), or by magic bytes. */
async function placementOf(objects: ObjectService, o: StoredObject): Promise<Placement> {
  if (o.contentType === 'tar' || o.contentType === 'tgz') return 'tar';
  const name = o.name.toLowerCase();
  if (/\.(tar|tar\.gz|tgz)$/.test(name)) return 'tar';
  if (name.endsWith('.zip')) return 'zip';
  if (!o.sizeBytes) return 'file';
  const head = await readHead(objects, o, Math.min(o.sizeBytes, 262) - 1);
  if (head.subarray(0, 4).equals(Buffer.from('PK\x03\x04', 'latin1'))) return 'zip';
  if (head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
  return 'file';
}

async function readHead(objects: ObjectService, o: StoredObject, end: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of await objects.read(o, { start: 0, end })) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** `p`, unless the deadline passes first (then `late()`; a stream `p` yields later is destroyed). */
function beforeDeadline<T>(p: Promise<T>, deadline: AbortSignal, late: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      void p.then(
        (v) => (v as { destroy?: () => void } | undefined)?.destroy?.(),
        () => undefined,
      );
      reject(late());
    };
    if (deadline.aborted) return onAbort();
    deadline.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => deadline.removeEventListener('abort', onAbort));
  });
}

/** The last bytes a process wrote to stderr (its reason), bounded. */
function tailOf(proc: BoxProcess): () => string {
  let tail = '';
  proc.stderr.on('data', (d: Buffer) => (tail = (tail + d.toString('utf8')).slice(-2000)));
  proc.stdout.resume();
  return () => tail.trim().split('\n').pop() ?? '';
}

/**
 * Places object `objectId`, read as account `accountId`, at `objectPath` in the box, through a process of the
 * box. At `deadline` (epoch ms) whatever it waits on stops (the blob read, the process's group is killed) and
 * the placement fails saying so: a stalled unpack (a huge archive, a stuck python3, a blob store that stopped
 * answering) must not hold a box `initializing` for ever.
 */
export async function placeObject(
  objects: ObjectService,
  config: ObjectConfig,
  sandbox: Sandbox,
  accountId: string,
  objectId: string,
  objectPath: string,
  deadline: number,
): Promise<void> {
  const what = `object mount ${objectId} at ${objectPath}`;
  const late = () => new Error(`${what} failed: not placed within ${config.mountTimeoutMs / 1000} s (DEVBOXD_OBJECT_MOUNT_TIMEOUT)`);
  const expired = new AbortController();
  const timer = setTimeout(() => expired.abort(), Math.max(0, deadline - Date.now()));
  try {
    const o = await objects.get(accountId, objectId).catch((err: Error) => {
      throw new Error(`${what} failed: ${err.message}`);
    });
    const placement = await beforeDeadline(placementOf(objects, o), expired.signal, late);
    const source = await beforeDeadline(objects.read(o), expired.signal, late);
    const argv =
      placement === 'file'
        ? ['sh', '-c', FILE_SCRIPT, 'sh', objectPath]
        : ['python3', '-c', UNPACK_SCRIPT, objectPath, placement, String(config.mountMaxBytes), String(config.mountMaxEntries)];
    const proc = sandbox.spawn({ argv });
    const reason = tailOf(proc);
    const stop = () => {
      proc.signal('SIGKILL', true);
      source.destroy();
    };
    expired.signal.addEventListener('abort', stop, { once: true });
    let exit;
    try {
      // The process may stop reading first (a refusal): its exit says why, not the broken pipe.
      await pipeline(source, proc.stdin).catch(() => undefined);
      exit = await proc.exited;
    } finally {
      expired.signal.removeEventListener('abort', stop);
    }
    if (expired.signal.aborted) throw late();
    if (exit.exitCode === 0) return;
    if (exit.exitCode === 127 && placement !== 'file') throw new Error(`${what} failed: unpacking an archive needs python3 in the box image`);
    const why = reason() || (exit.signal ? `killed by ${exit.signal}` : `exit status ${exit.exitCode}`);
    throw new Error(`${what} failed${exit.exitCode === EXIT_REFUSED ? '' : ` (${placement === 'file' ? 'writing' : 'unpacking'})`}: ${why}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Object mounts in a devbox's `mounts`: the resolver refuses a create whose objects the account cannot read
 * or that are not complete (400, naming the mount); the boot step then places each object before launch
 * commands run, as the box user through the box's own processes (never by host-side writes).
 */
export function objectMountExtensions(objects: () => ObjectService, config: ObjectConfig): { resolver: CreateResolver; bootStep: BootStep } {
  const resolver: CreateResolver = async (accountId, input) => {
    for (const [i, m] of (input.objectMounts ?? []).entries()) {
      const field = `mounts[${i}]`;
      if (!m.objectPath.startsWith('/')) throw ERRORS.invalid(`${field}.object_path must be an absolute path in the box, got "${m.objectPath}"`);
      const o = await objects()
        .get(accountId, m.objectId)
        .catch((err: unknown) => {
          throw err instanceof DomainError && err.code === 'not_found' ? ERRORS.invalid(`${field}.object_id: object ${m.objectId} not found`) : err;
        });
      if (o.state !== 'READ_ONLY') throw ERRORS.invalid(`${field}.object_id: object ${m.objectId} is ${o.state}; complete its upload first`);
    }
    return undefined;
  };

  const bootStep: BootStep = {
    name: 'object mounts',
    applies: (ctx) => !ctx.resuming && ctx.objectMounts.length > 0,
    async run({ devbox, sandbox, objectMounts }) {
      // One deadline for all the box's mounts.
      const deadline = Date.now() + config.mountTimeoutMs;
      for (const m of objectMounts) await placeObject(objects(), config, sandbox, devbox.accountId, m.objectId, m.objectPath, deadline);
    },
  };

  return { resolver, bootStep };
}
