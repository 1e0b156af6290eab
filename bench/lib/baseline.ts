import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../../test/helpers/server.js';

/** Starts `bench/baseline-fastify.ts` (a bare Fastify route on devboxd's dual-protocol listener), or another baseline server that prints the same line. */
export async function startBaseline(script = 'bench/baseline-fastify.ts'): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  return { url, pid: child.pid!, stop: () => child.kill() };
}
