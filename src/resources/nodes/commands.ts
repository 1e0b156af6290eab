import type { CommandContext } from '../../host.js';
import type { ModuleCommand } from '../../platform/module/index.js';
import type { Store } from '../../platform/store/types.js';
import { ON_NODE } from '../devboxes/index.js';
import { readLoads } from './node-service.js';
import { SqlNodeStore } from './sql-node-store.js';
import type { Capacity, NodeLoad } from './types.js';

type Io = CommandContext['io'];

const GiB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GiB).toFixed(1)}GiB`;
const cores = (n: number) => String(Math.round(n * 1000) / 1000);
const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
const wire = (c: Capacity) => ({ cpu_cores: c.cpuCores, memory_bytes: c.memoryBytes, disk_bytes: c.diskBytes });

/** The registry as `devboxd nodes --json` prints it (snake_case, times in ms). */
export function nodesJson(loads: readonly NodeLoad[]) {
  return {
    nodes: loads.map((n) => ({
      name: n.name,
      state: n.state,
      lease: n.lease,
      address: n.address,
      api_url: n.apiUrl,
      version: n.version,
      capacity: wire(n.capacity),
      free: wire(n.free),
      devboxes: n.devboxes,
      heartbeat_time_ms: n.heartbeatMs,
      lease_expires_time_ms: n.leaseExpiresMs,
      started_time_ms: n.startedAtMs,
      stopped_time_ms: n.stoppedAtMs,
      lost_time_ms: n.lostAtMs,
    })),
  };
}

/** The registry as `devboxd nodes` prints it: a header, then a tab-separated line per node. */
export function nodesTable(loads: readonly NodeLoad[]): string {
  const head = ['NAME', 'STATE', 'LEASE', 'ADDRESS', 'API_URL', 'CPU', 'MEMORY', 'DISK', 'FREE_CPU', 'FREE_MEMORY', 'FREE_DISK', 'DEVBOXES', 'HEARTBEAT'];
  const rows = loads.map((n) => [
    n.name,
    n.state,
    n.lease,
    n.address ?? '-',
    n.apiUrl ?? '-',
    cores(n.capacity.cpuCores),
    gib(n.capacity.memoryBytes),
    gib(n.capacity.diskBytes),
    cores(n.free.cpuCores),
    gib(n.free.memoryBytes),
    gib(n.free.diskBytes),
    String(n.devboxes),
    iso(n.heartbeatMs),
  ]);
  return [head, ...rows].map((r) => `${r.join('\t')}\n`).join('');
}

function fail(io: Io, message: string): number {
  io.err(`${message}\n`);
  return 1;
}

/**
 * `devboxd drain NODE`: marks NODE draining (the server that owns it sees so at its next renewal, takes no new
 * box and suspends its boxes through the eviction drain), then waits up to `waitSeconds` until no box of NODE
 * holds a sandbox. Exit 0 once none does (or at once with 0 seconds, or when no server of NODE runs: it drains
 * at its next start), 1 when some still do or NODE cannot drain.
 */
export async function drainNode(store: Store, io: Io, name: string, waitSeconds: number): Promise<number> {
  const nodes = new SqlNodeStore(store.db);
  const n = (await nodes.setState(name, ['active', 'draining'], 'draining')) ?? (await nodes.get(name));
  if (!n) return fail(io, `no node named ${name} (devboxd nodes lists them)`);
  if (n.state !== 'draining') return fail(io, `node ${name} is ${n.state}: its boxes failed when it was declared lost, nothing is left to drain`);
  const load = (await readLoads(store)).find((l) => l.name === name)!;
  io.out(`node ${name} is draining: it takes no new devbox, and suspends its ${load.devboxes} devboxes\n`);
  if (load.lease !== 'live') {
    io.out(`no server of node ${name} runs now (its lease is ${load.lease}): its devboxes are suspended when it starts\n`);
    return 0;
  }
  const until = Date.now() + waitSeconds * 1000;
  for (;;) {
    const left = (await store.devboxes.listByStatus(ON_NODE, name)).filter((d) => d.node === name);
    if (!left.length) {
      io.out(`drained: node ${name} holds no running devbox\n`);
      return 0;
    }
    if (Date.now() >= until) {
      if (waitSeconds > 0) io.out(`still on node ${name} after ${waitSeconds} s: ${left.map((d) => `${d.id} (${d.status})`).join(', ')}\n`);
      return waitSeconds > 0 ? 1 : 0;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The registry's commands: list, undo a drain, forget a lost node. */
export const NODE_COMMANDS: readonly ModuleCommand<CommandContext>[] = [
  {
    words: ['nodes'],
    args: [],
    options: { json: { type: 'boolean', help: 'print JSON ({"nodes": [...]}, sizes in bytes and cores, times in ms)' } },
    summary: `the servers sharing the database: state (active, draining, lost), lease (live, lapsed, stopped),
address, API URL, capacity, free room (capacity minus the sizes of the devboxes on it), devboxes, last heartbeat`,
    run: ({ io, withStore }, _args, o) =>
      withStore(async (store) => {
        const loads = await readLoads(store);
        io.out(o.json ? `${JSON.stringify(nodesJson(loads), null, 2)}\n` : nodesTable(loads));
        return 0;
      }),
  },
  {
    words: ['undrain'],
    args: ['NODE'],
    summary: 'a draining node takes new devboxes again (its suspended ones stay suspended until resumed)',
    run: ({ io, withStore }, { NODE }) =>
      withStore(async (store) => {
        const nodes = new SqlNodeStore(store.db);
        const n = (await nodes.setState(NODE!, ['draining'], 'active')) ?? (await nodes.get(NODE!));
        if (!n) return fail(io, `no node named ${NODE} (devboxd nodes lists them)`);
        if (n.state !== 'active') return fail(io, `node ${NODE} is ${n.state}, not draining`);
        io.out(`node ${NODE} is active\n`);
        return 0;
      }),
  },
  {
    words: ['nodes', 'forget'],
    args: ['NODE'],
    summary: 'remove a lost node from the registry (a server gone for good; if it starts again, it registers anew)',
    run: ({ io, withStore }, { NODE }) =>
      withStore(async (store) => {
        if (await new SqlNodeStore(store.db).forget(NODE!)) {
          io.out(`forgot node ${NODE}\n`);
          return 0;
        }
        const n = await new SqlNodeStore(store.db).get(NODE!);
        return fail(io, n ? `node ${NODE} is ${n.state}: only a lost node is forgotten` : `no node named ${NODE}`);
      }),
  },
];
