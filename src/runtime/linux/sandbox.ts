/** One running box: its init process, cgroup and writable layer. */
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError, type BoxProcess, type Sandbox, type SandboxStats, type SpawnSpec } from '../driver.js';
import type { BoxCgroup } from './cgroups.js';
import { execInBox } from './exec.js';
import type { ExecDaemon } from './execd.js';
import { diskUsage, fsyncDir, run } from './fsutil.js';
import type { LivenessWatcher } from './liveness.js';
import type { RuntimeLogger } from './logger.js';
import { isSafeId, type DataPaths } from './paths.js';
import type { IdRanges } from './idranges.js';
import { isAlive } from './proc.js';
import type { BoxUser } from './rootfs.js';

/** What `<box>/state.json` holds: enough to re-attach after a server restart. */
export interface BoxState {
  pid: number;
  /** Start time of the init (clock ticks since boot, /proc/<pid>/stat field 22). */
  startTime: number;
  user: BoxUser;
  hostname: string;
  createdAt: string;
  /** First host id of the box's id range (idranges.ts); absent for boxes made before ranges. */
  idBase?: number;
}

/**
 * The writable layer is measured at most this often, and at most 10% of the time for a big layer
 * (the walk takes ~70 µs a file); stats() returns the last figure meanwhile.
 */
const DISK_TTL_MS = 5_000;

export interface SandboxContext {
  paths: DataPaths;
  cgroup: BoxCgroup;
  watcher: LivenessWatcher;
  log: RuntimeLogger;
  /** The fast exec path; absent or dead means commands spawn boxexec directly. */
  execd?: ExecDaemon;
  ranges: IdRanges;
}

/** The socket of a box's forker (native/forkd.c), in the box's directory. */
export function forkerSocket(paths: DataPaths, id: string): string {
  return join(paths.box(id), 'exec.sock');
}

export class LinuxSandbox implements Sandbox {
  readonly died: Promise<void>;
  private destroying: Promise<void> | undefined;
  private disk = { bytes: 0, at: 0, ttl: DISK_TTL_MS };
  private diskPending: Promise<number> | undefined;

  constructor(
    readonly id: string,
    private readonly ctx: SandboxContext,
    private readonly state: BoxState,
  ) {
    this.died = new Promise((resolve) => ctx.watcher.watch(id, state.pid, state.startTime, resolve));
  }

  private get upper(): string {
    return join(this.ctx.paths.box(this.id), 'upper');
  }

  spawn(spec: SpawnSpec): BoxProcess {
    if (this.destroying) throw new SandboxError('not_found', `sandbox ${this.id} is destroyed`);
    return execInBox(
      { forker: forkerSocket(this.ctx.paths, this.id), user: this.state.user },
      spec,
      this.ctx.execd,
    );
  }

  async snapshot(layerId: string, opts: { stop?: boolean } = {}): Promise<{ sizeBytes: number }> {
    if (!isSafeId(layerId)) throw new SandboxError('failed', `invalid layer id ${JSON.stringify(layerId)}`);
    const { paths, cgroup } = this.ctx;
    const final = paths.layer(layerId);
    const tmp = join(paths.layers, `.tmp-${layerId}`);
    if (existsSync(final)) throw new SandboxError('failed', `layer ${layerId} already exists`);
    await rm(tmp, { recursive: true, force: true });
    try {
      if (opts.stop) {
        // Nothing runs any more, so nothing writes: the writable layer is moved, not copied.
        this.ctx.watcher.unwatch(this.id);
        await stopProcesses(this.ctx.cgroup, this.state);
        await rename(this.upper, tmp);
      } else {
        // Frozen for the copy: the layer is the writable layer at one instant.
        await cgroup.freeze();
        try {
          // cp -a keeps owners, modes, times, xattrs (overlay's opaque/redirect marks) and whiteout devices.
          await run('cp', ['-a', '--reflink=auto', '--', `${this.upper}/.`, tmp]);
        } finally {
          cgroup.thaw();
        }
      }
      await run('sync', ['-f', tmp]);
      await rename(tmp, final);
      await fsyncDir(paths.layers);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      if (err instanceof SandboxError) throw err;
      throw new SandboxError('failed', `snapshot of ${this.id} failed: ${(err as Error).message}`);
    }
    return { sizeBytes: await diskUsage(final) };
  }

  async stats(): Promise<SandboxStats> {
    let usage;
    try {
      usage = this.ctx.cgroup.usage();
    } catch (err) {
      throw new SandboxError('not_found', `sandbox ${this.id} has no cgroup: ${(err as Error).message}`);
    }
    return { ...usage, diskBytes: await this.diskBytes() };
  }

  /** Bytes of the writable layer, cached (see DISK_TTL_MS); concurrent callers share one walk. */
  private diskBytes(): Promise<number> {
    if (Date.now() - this.disk.at < this.disk.ttl) return Promise.resolve(this.disk.bytes);
    const started = Date.now();
    this.diskPending ??= diskUsage(this.upper).then((bytes) => {
      this.disk = { bytes, at: Date.now(), ttl: Math.max(DISK_TTL_MS, (Date.now() - started) * 10) };
      this.diskPending = undefined;
      return bytes;
    });
    return this.diskPending;
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      this.ctx.watcher.unwatch(this.id);
      await teardown(this.ctx.paths, this.ctx.cgroup, this.state, this.ctx.ranges);
    })();
    return this.destroying;
  }
}

/** Kills a box's processes, removes its cgroups and its directory (writable layer included). */
export async function teardown(
  paths: DataPaths,
  cgroup: BoxCgroup,
  state: Pick<BoxState, 'pid' | 'startTime' | 'idBase'> | null,
  ranges: IdRanges,
): Promise<void> {
  await stopProcesses(cgroup, state);
  await rm(paths.box(cgroup.id), { recursive: true, force: true, maxRetries: 3 });
  // No process of the box is left (the cgroup is empty): its host ids may serve another box.
  if (state?.idBase) ranges.release(state.idBase, paths.box(cgroup.id));
}

/**
 * SIGKILL to the init ends every process of its PID namespace; the cgroup sweep catches the rest and removes
 * the groups. Resolves once no task is left.
 */
async function stopProcesses(cgroup: BoxCgroup, state: Pick<BoxState, 'pid' | 'startTime'> | null): Promise<void> {
  if (state && isAlive(state.pid, state.startTime)) {
    try {
      process.kill(state.pid, 'SIGKILL');
    } catch {
      /* died meanwhile */
    }
  }
  await cgroup.destroy();
}
