import fs from 'node:fs';

/** utime + stime of a process, in µs (the kernel counts in ticks of 10 ms: read over seconds, not calls). */
export function processCpuMicros(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/**
 * The same summed over every process named `postgres` (a local cluster's backends and helpers); with `port`,
 * only the cluster listening there (its postmaster, named by `-p <port>`, and its children): other sessions'
 * test clusters on a shared machine are not counted.
 */
export function postgresCpuMicros(port?: number): number {
  const procs: { pid: number; ppid: number; cmd: string }[] = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      procs.push({ pid: Number(pid), ppid, cmd: port === undefined ? '' : fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') });
    } catch {
      // gone meanwhile
    }
  }
  const master = port === undefined ? undefined : procs.find((p) => p.cmd.includes(`\0-p\0${port}\0`))?.pid;
  let total = 0;
  for (const p of procs) {
    if (port !== undefined && p.pid !== master && p.ppid !== master) continue;
    try {
      total += processCpuMicros(p.pid);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** CPU (µs) each named source spent while `fn` ran, and its result. */
export async function cpuDuring<T>(sources: Record<string, () => number>, fn: () => Promise<T>): Promise<{ result: T; cpu: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(sources).map(([k, read]) => [k, read()]));
  const result = await fn();
  const cpu = Object.fromEntries(Object.entries(sources).map(([k, read]) => [k, read() - before[k]!]));
  return { result, cpu };
}
