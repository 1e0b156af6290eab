/**
 * Control groups of the boxes: one group `devboxd/<id>` under every hierarchy the driver uses.
 * Works on cgroup v1, v2 and the v1/v2 hybrid (controllers on v1 hierarchies, an empty unified tree):
 * each controller is looked up where the host mounts it, preferring v1 when a hierarchy carries it.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { DISK_CAPS } from './iolimit.js';

type DiskCaps = typeof DISK_CAPS;

type Controller = 'cpu' | 'cpuacct' | 'cpuset' | 'memory' | 'pids' | 'freezer';
const CONTROLLERS: Controller[] = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'freezer'];

interface Hierarchy {
  mount: string;
  v2: boolean;
}

/** Where each controller lives on this host. */
export interface CgroupLayout {
  byController: Map<Controller, Hierarchy>;
  /** Distinct hierarchies in use (each gets a box group). */
  hierarchies: Hierarchy[];
  /** The blkio (v1) or io (v2) controller, when the host has one. */
  io?: Hierarchy;
}

const CPU_PERIOD_US = 100_000;

function read(path: string): string {
  return readFileSync(path, 'utf8');
}

function tryWrite(path: string, value: string): boolean {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
}

/** Reads /proc/self/mountinfo to find the v1 hierarchies and the unified (v2) mount. */
export function detectLayout(): CgroupLayout {
  const byController = new Map<Controller, Hierarchy>();
  let unified: string | undefined;
  let io: Hierarchy | undefined;
  for (const line of read('/proc/self/mountinfo').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const mount = pre.split(' ')[4]!;
    const [fstype, , superOpts = ''] = post.split(' ');
    if (fstype === 'cgroup2' && !unified) unified = mount;
    if (fstype !== 'cgroup') continue;
    const opts = superOpts.split(',');
    if (opts.includes('blkio') && !io) io = { mount, v2: false };
    for (const c of CONTROLLERS) if (opts.includes(c) && !byController.has(c)) byController.set(c, { mount, v2: false });
  }
  if (unified) {
    const available = read(join(unified, 'cgroup.controllers')).trim().split(/\s+/);
    const v2: Hierarchy = { mount: unified, v2: true };
    for (const c of CONTROLLERS) {
      if (byController.has(c)) continue;
      // v2 folds cpuacct into cpu (cpu.stat is always there) and freezing into the core (cgroup.freeze).
      if (available.includes(c) || c === 'cpuacct' || c === 'freezer') byController.set(c, v2);
    }
  }
  for (const c of ['memory', 'pids', 'cpu'] as const) {
    if (!byController.has(c)) throw new Error(`cgroup controller ${c} is not available on this host`);
  }
  const hierarchies = [...new Set(byController.values())];
  if (!io && unified && hierarchies.some((h) => h.v2) && read(join(unified, 'cgroup.controllers')).split(/\s+/).includes('io')) {
    io = hierarchies.find((h) => h.v2);
  }
  return { byController, hierarchies, io };
}

/** Prepares the `devboxd` parent group in each hierarchy once (controllers delegated, cpusets filled). */
export function prepareParents(layout: CgroupLayout): void {
  for (const h of layout.hierarchies) {
    const parent = join(h.mount, 'devboxd');
    mkdirSync(parent, { recursive: true });
    if (h.v2) {
      const want = ['cpu', 'memory', 'pids', 'cpuset'].filter((c) => layout.byController.get(c as Controller) === h);
      if (layout.io === h) want.push('io');
      for (const dir of [h.mount, parent]) for (const c of want) tryWrite(join(dir, 'cgroup.subtree_control'), `+${c}`);
    } else if (layout.byController.get('cpuset') === h) {
      // A v1 cpuset group takes no task until its cpus and mems are set.
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        if (read(join(parent, f)).trim() === '') writeFileSync(join(parent, f), read(join(h.mount, f)).trim());
      }
    }
  }
}

/** Parses a cpu list such as "0-3,6". */
function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    if (!part) continue;
    const [a, b] = part.split('-').map(Number);
    for (let c = a!; c <= (b ?? a!); c++) cpus.push(c);
  }
  return cpus;
}

function hashId(id: string): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return h;
}

export interface BoxLimits {
  cpuCores: number;
  memoryBytes: number;
  pids: number;
}

export interface CgroupUsage {
  memoryBytes: number;
  memoryLimitBytes: number;
  cpuMicros: number;
  oomKills: number;
  pids: number;
}

/** The cgroups of one box. Cheap to construct; `create` makes the directories. */
export class BoxCgroup {
  private readonly dirOf: Map<Controller, { dir: string; v2: boolean }>;

  constructor(
    private readonly layout: CgroupLayout,
    readonly id: string,
  ) {
    this.dirOf = new Map();
    for (const [c, h] of layout.byController) this.dirOf.set(c, { dir: join(h.mount, 'devboxd', id), v2: h.v2 });
  }

  /** One directory per hierarchy. */
  get dirs(): string[] {
    return this.layout.hierarchies.map((h) => join(h.mount, 'devboxd', this.id));
  }

  /** The files a process writes its pid into to join the box. */
  get procsFiles(): string[] {
    return this.dirs.map((d) => join(d, 'cgroup.procs'));
  }

  /** `HOSTDIR:SUBDIR` pairs for boxinit -b: how /sys/fs/cgroup looks inside the box. */
  get binds(): string[] {
    const hs = this.layout.hierarchies;
    if (hs.length === 1 && hs[0]!.v2) return [`${this.dirs[0]}:`];
    return hs.map((h) => `${join(h.mount, 'devboxd', this.id)}:${h.v2 ? 'unified' : basename(h.mount)}`);
  }

  private dir(c: Controller): { dir: string; v2: boolean } | undefined {
    return this.dirOf.get(c);
  }

  create(limits: BoxLimits): void {
    for (const d of this.dirs) mkdirSync(d);
    const mem = this.dir('memory')!;
    if (mem.v2) {
      writeFileSync(join(mem.dir, 'memory.max'), String(limits.memoryBytes));
      tryWrite(join(mem.dir, 'memory.swap.max'), '0');
    } else {
      writeFileSync(join(mem.dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      tryWrite(join(mem.dir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      tryWrite(join(mem.dir, 'memory.swappiness'), '0');
    }
    const cpu = this.dir('cpu')!;
    const quota = Math.max(1000, Math.round(limits.cpuCores * CPU_PERIOD_US));
    if (cpu.v2) {
      writeFileSync(join(cpu.dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
    } else {
      writeFileSync(join(cpu.dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      writeFileSync(join(cpu.dir, 'cpu.cfs_quota_us'), String(quota));
    }
    writeFileSync(join(this.dir('pids')!.dir, 'pids.max'), String(Math.max(1, Math.floor(limits.pids))));
    try {
      this.pinCpus(limits.cpuCores);
    } catch {
      /* cpuset not delegated here: nproc shows the host's cpus, the quota still applies */
    }
  }

  /**
   * Gives a box of N whole cores (fewer than the host has) N cpus, so `nproc` inside tells the truth;
   * the start cpu is spread by id. Fractional boxes get one cpu; the CFS quota still caps the time.
   */
  private pinCpus(cores: number): void {
    const cs = this.dir('cpuset');
    if (!cs) return;
    const parent = join(cs.dir, '..');
    const hostCpus = parseCpuList(read(join(parent, cs.v2 ? 'cpuset.cpus.effective' : 'cpuset.cpus')));
    const want = Math.max(1, Math.floor(cores));
    let chosen = hostCpus;
    if (want < hostCpus.length) {
      const start = hashId(this.id) % hostCpus.length;
      chosen = Array.from({ length: want }, (_, i) => hostCpus[(start + i) % hostCpus.length]!);
    }
    if (!cs.v2) writeFileSync(join(cs.dir, 'cpuset.mems'), read(join(parent, 'cpuset.mems')).trim());
    tryWrite(join(cs.dir, 'cpuset.cpus'), chosen.join(','));
  }

  /**
   * Caps the I/O of the box's own disk device `dev` (MAJOR:MINOR). On v1 the rule goes on the root group:
   * v1 charges buffered writeback to the root, not to the box, and the device carries only this box's I/O,
   * so a rule for the device bounds everything the box writes. On v2 it is the box group's io.max.
   */
  limitDisk(dev: string, caps: DiskCaps = DISK_CAPS): void {
    const io = this.layout.io;
    if (!io) return;
    if (io.v2) {
      tryWrite(
        join(io.mount, 'devboxd', this.id, 'io.max'),
        `${dev} rbps=${caps.readBps} wbps=${caps.writeBps} riops=${caps.readIops} wiops=${caps.writeIops}`,
      );
      return;
    }
    for (const [file, v] of v1Rules(caps)) tryWrite(join(io.mount, file), `${dev} ${v}`);
  }

  /** Drops the v1 rules of a device the box no longer holds (a loop device is reused by the next disk). */
  unlimitDisk(dev: string): void {
    const io = this.layout.io;
    if (!io || io.v2) return;
    for (const [file] of v1Rules(DISK_CAPS)) tryWrite(join(io.mount, file), `${dev} 0`);
  }

  usage(): CgroupUsage {
    const mem = this.dir('memory')!;
    const cpu = this.dir('cpuacct') ?? this.dir('cpu')!;
    const num = (path: string): number => {
      const v = read(path).trim();
      return v === 'max' ? Number.MAX_SAFE_INTEGER : Number(v);
    };
    const field = (text: string, key: string): number => {
      const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
      return m ? Number(m[1]) : 0;
    };
    return {
      memoryBytes: num(join(mem.dir, mem.v2 ? 'memory.current' : 'memory.usage_in_bytes')),
      memoryLimitBytes: num(join(mem.dir, mem.v2 ? 'memory.max' : 'memory.limit_in_bytes')),
      oomKills: field(read(join(mem.dir, mem.v2 ? 'memory.events' : 'memory.oom_control')), 'oom_kill'),
      cpuMicros: cpu.v2 ? field(read(join(cpu.dir, 'cpu.stat')), 'usage_usec') : Math.round(num(join(cpu.dir, 'cpuacct.usage')) / 1000),
      pids: num(join(this.dir('pids')!.dir, 'pids.current')),
    };
  }

  /**
   * Freezes every process of the box; resolves once the kernel reports the group frozen. A group that does
   * not freeze in time (a task stuck in the kernel, on a loaded host) is thawed before the error: left
   * half-frozen, the box would hang every later command and file write.
   */
  async freeze(timeoutMs = 10_000): Promise<void> {
    const f = this.dir('freezer');
    if (!f) return; // no freezer on this host: the copy is taken live
    const request = () => (f.v2 ? writeFileSync(join(f.dir, 'cgroup.freeze'), '1') : writeFileSync(join(f.dir, 'freezer.state'), 'FROZEN'));
    request();
    const deadline = Date.now() + timeoutMs;
    for (let i = 0; Date.now() < deadline; i++) {
      const frozen = f.v2 ? /^frozen 1$/m.test(read(join(f.dir, 'cgroup.events'))) : read(join(f.dir, 'freezer.state')).trim() === 'FROZEN';
      if (frozen) return;
      // The v1 freezer tries the tasks it could not freeze again only when asked again (FREEZING stays else).
      if (!f.v2 && i % 10 === 9) request();
      await sleep(i < 20 ? 1 : 10);
    }
    this.thaw();
    throw new Error(`cgroup of ${this.id} did not freeze within ${timeoutMs} ms (thawed again)`);
  }

  thaw(): void {
    const f = this.dir('freezer');
    if (!f) return;
    if (f.v2) writeFileSync(join(f.dir, 'cgroup.freeze'), '0');
    else writeFileSync(join(f.dir, 'freezer.state'), 'THAWED');
  }

  /** Host pids of every process in the box (from the pids hierarchy). */
  pidsInGroup(): number[] {
    try {
      return read(join(this.dir('pids')!.dir, 'cgroup.procs'))
        .split('\n')
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }

  /** Kills whatever is left in the groups and removes them; waits (bounded) for the tasks to exit. */
  async destroy(): Promise<void> {
    const pidsDir = this.dir('pids')!;
    if (!existsSync(pidsDir.dir)) {
      await this.removeDirs();
      return;
    }
    if (pidsDir.v2) tryWrite(join(pidsDir.dir, 'cgroup.kill'), '1');
    for (let i = 0; i < 500; i++) {
      const left = this.pidsInGroup();
      if (left.length === 0) break;
      if (i % 10 === 0) {
        // A frozen task cannot die: thaw first (v1 and v2), then kill.
        try {
          this.thaw();
        } catch {
          /* no freezer group */
        }
        for (const pid of left) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            /* already gone */
          }
        }
      }
      await sleep(i < 50 ? 2 : 20);
    }
    await this.removeDirs();
  }

  private async removeDirs(): Promise<void> {
    for (const d of this.dirs) {
      if (!existsSync(d)) continue;
      for (let i = 0; ; i++) {
        try {
          rmdirSync(d);
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
          if (i >= 50) throw err;
          // EBUSY for a moment while the last task's exit finishes.
          await sleep(10);
        }
      }
    }
  }
}

function v1Rules(caps: DiskCaps): [string, number][] {
  return [
    ['blkio.throttle.read_bps_device', caps.readBps],
    ['blkio.throttle.write_bps_device', caps.writeBps],
    ['blkio.throttle.read_iops_device', caps.readIops],
    ['blkio.throttle.write_iops_device', caps.writeIops],
  ];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
