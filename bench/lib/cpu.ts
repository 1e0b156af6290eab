import fs from 'node:fs';

/** utime + stime of a process, in µs (the kernel counts in ticks of 10 ms: read over seconds, not calls). */
export function processCpuMicros(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** The same summed over every process named `postgres` (a local cluster's backends and helpers). */
export function postgresCpuMicros(): number {
  let total = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += processCpuMicros(Number(pid));
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
