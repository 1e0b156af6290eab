/**
 * A network namespace the test owns, joined to the host by a veth, with a server of the test's inside: what
 * boxes reach in egress tests (private-world.ts, network-nodes.test.ts). The host end has only its own /32
 * address, so its network is in no server's floor, and the host routes the given networks through the veth.
 * No packet leaves the machine. Names are fixed per world: what a killed run left is removed by the next one.
 */
import { execFileSync, spawn } from 'node:child_process';

export interface WorldSpec {
  /** Name of the namespace, and of the host end of its link. */
  ns: string;
  hostIf: string;
  hostSide: string;
  /** The namespace's addresses (each a /32 on its end). */
  addresses: readonly string[];
  /** What the host routes into the namespace. */
  routes: readonly string[];
  /** Node code run in the namespace with the addresses as arguments; it prints `ready` once listening. */
  server: string;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });

function cleanup(w: WorldSpec): void {
  for (const args of [
    ['netns', 'del', w.ns],
    ['link', 'del', w.hostIf],
  ]) {
    try {
      ip(...args);
    } catch {
      /* not there */
    }
  }
}

export async function startWorld(w: WorldSpec): Promise<{ close(): void }> {
  cleanup(w);
  ip('netns', 'add', w.ns);
  ip('link', 'add', w.hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', w.ns);
  ip('addr', 'add', `${w.hostSide}/32`, 'dev', w.hostIf);
  ip('link', 'set', w.hostIf, 'up');
  for (const net of w.routes) ip('route', 'add', net, 'dev', w.hostIf);
  for (const a of w.addresses) ip('-n', w.ns, 'addr', 'add', `${a}/32`, 'dev', 'eth0');
  ip('-n', w.ns, 'link', 'set', 'eth0', 'up');
  ip('-n', w.ns, 'link', 'set', 'lo', 'up');
  ip('-n', w.ns, 'route', 'add', w.hostSide, 'dev', 'eth0');
  ip('-n', w.ns, 'route', 'add', 'default', 'via', w.hostSide);
  const server = spawn('ip', ['netns', 'exec', w.ns, process.execPath, '-e', w.server, ...w.addresses], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    server.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    server.once('exit', (code) => reject(new Error(`the server of ${w.ns} exited with ${code}`)));
  }).catch((err) => {
    cleanup(w);
    throw err;
  });
  return {
    close() {
      server.kill('SIGKILL');
      cleanup(w);
    },
  };
}
