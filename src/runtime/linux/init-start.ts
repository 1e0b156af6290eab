/** Starting a box's init (boxinit), through the exec daemon when it runs, else as a child of its own session. */
import { spawn } from 'node:child_process';
import type { ExecDaemon } from './execd.js';
import { native } from './paths.js';

const INIT_TIMEOUT_MS = 10_000;

/** Runs boxinit; resolves with the init's host pid once the box is ready for commands. */
export function startInit(execd: ExecDaemon | undefined, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const done = (code: number | null, signal: string | null): void => {
      const pid = Number.parseInt(out, 10);
      if (code === 0 && pid > 0) resolve(pid);
      else reject(new Error(err.trim() || `boxinit ended with ${code ?? signal}`));
    };
    if (execd?.alive) {
      // Through the exec daemon: no fork of the server. boxinit starts in a session of its own.
      const p = execd.exec(args, 'boxinit');
      p.stdin.end();
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const timer = setTimeout(() => p.signal('SIGKILL', false), INIT_TIMEOUT_MS);
      const drained = new Promise((r) => p.stdout.on('end', r));
      void Promise.all([p.exited, drained]).then(([e]) => {
        clearTimeout(timer);
        done(e.exitCode, e.signal);
      });
      return;
    }
    // Own session: the box must survive the server's exit and its terminal's signals.
    const child = spawn(native.boxinit, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: {} });
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), INIT_TIMEOUT_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done(code, signal);
    });
  });
}
