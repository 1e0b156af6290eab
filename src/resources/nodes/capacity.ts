import { readFileSync, statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Capacity } from './types.js';

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * What this host offers boxes, for each part the operator did not set: CPU cores (the server's cgroup quota
 * where it has one, else the cores it may run on), memory (its cgroup's limit where lower than the host's)
 * and disk (the size of the filesystem holding the data dir, where the boxes' disks are).
 */
export function hostCapacity(dataDir: string, given: Partial<Capacity>, root = CGROUP_ROOT): Capacity {
  const groups = ownCgroups();
  return {
    cpuCores: given.cpuCores ?? Math.min(os.availableParallelism(), cpuQuota(root, groups) ?? Number.POSITIVE_INFINITY),
    memoryBytes: given.memoryBytes ?? Math.min(os.totalmem(), memoryLimit(root, groups) ?? Number.POSITIVE_INFINITY),
    diskBytes: given.diskBytes ?? filesystemBytes(dataDir),
  };
}

/** This process's cgroup per controller ('' for the v2 hierarchy), from /proc/self/cgroup. */
function ownCgroups(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of read('/proc/self/cgroup')?.split('\n') ?? []) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const controller of m[1]!.split(',')) out.set(controller, m[2]!);
  }
  return out;
}

/** The CPU quota in cores of the server's cgroup (v2 cpu.max, v1 cpu.cfs_quota_us), undefined without one. */
export function cpuQuota(root: string, groups: Map<string, string>): number | undefined {
  const v2 = groups.get('');
  const max = v2 === undefined ? undefined : (read(path.join(root, v2, 'cpu.max')) ?? read(path.join(root, 'unified', v2, 'cpu.max')));
  const m = max && /^(\d+) (\d+)/.exec(max);
  if (m) return Number(m[1]) / Number(m[2]);
  const v1 = groups.get('cpu');
  if (v1 === undefined) return undefined;
  for (const dir of ['cpu', 'cpu,cpuacct']) {
    const quota = Number(read(path.join(root, dir, v1, 'cpu.cfs_quota_us')));
    const period = Number(read(path.join(root, dir, v1, 'cpu.cfs_period_us')));
    if (quota > 0 && period > 0) return quota / period;
  }
  return undefined;
}

/** The memory limit in bytes of the server's cgroup (v2 memory.max, v1 memory.limit_in_bytes), undefined without one. */
export function memoryLimit(root: string, groups: Map<string, string>): number | undefined {
  const v2 = groups.get('');
  const max = v2 === undefined ? undefined : (read(path.join(root, v2, 'memory.max')) ?? read(path.join(root, 'unified', v2, 'memory.max')));
  if (max && /^\d+$/.test(max)) return Number(max);
  const v1 = groups.get('memory');
  const limit = v1 === undefined ? undefined : read(path.join(root, 'memory', v1, 'memory.limit_in_bytes'));
  // v1 says "no limit" with a number near 2^63.
  return limit && /^\d+$/.test(limit) && Number(limit) < 2 ** 62 ? Number(limit) : undefined;
}

function filesystemBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.blocks * s.bsize;
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
