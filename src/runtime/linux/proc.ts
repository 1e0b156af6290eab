/** Process identity on the host: a pid plus its start time, so a recycled pid is never mistaken. */
import { readFileSync } from 'node:fs';

export interface ProcInfo {
  state: string;
  startTime: number;
}

/** State and start time (clock ticks since boot) from /proc/<pid>/stat; null when there is no such pid. */
export function procInfo(pid: number): ProcInfo | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name may hold spaces and parentheses: fields are counted after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0]!, startTime: Number(fields[19]) };
}

/** True when `pid` runs (not a zombie) and is the process that started at `startTime`. */
export function isAlive(pid: number, startTime: number): boolean {
  const info = procInfo(pid);
  return info !== null && info.state !== 'Z' && info.state !== 'X' && info.startTime === startTime;
}

/** Cheapest liveness probe (one syscall, no allocation): false once the pid is gone. */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
