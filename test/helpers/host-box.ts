import { spawn } from 'node:child_process';
import type { BoxProcess, Sandbox } from '../../src/runtime/driver.js';

/**
 * A stand-in box whose commands run on the host, for unit tests of code that only sees the Sandbox port
 * (BoxJobs, output storage); the real sandbox is tested through the SDK in test/api.
 */
export function hostBox(id: string): Sandbox {
  return {
    id,
    spawn({ argv, env }: { argv: string[]; env?: Record<string, string> }): BoxProcess {
      const child = spawn(argv[0]!, argv.slice(1), { env: { PATH: process.env.PATH, ...env }, detached: true });
      return {
        stdin: child.stdin,
        stdout: child.stdout,
        stderr: child.stderr,
        exited: new Promise((resolve) => child.on('exit', (exitCode, signal) => resolve({ exitCode, signal }))),
        signal: (sig, group) => (group ? process.kill(-child.pid!, sig) : child.kill(sig)),
        resize: () => undefined,
        close: () => [child.stdin, child.stdout, child.stderr].forEach((s) => s.destroy()),
      };
    },
  } as unknown as Sandbox;
}
