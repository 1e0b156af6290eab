// What the node agent's RPC hop costs: create_and_await_running and `execute_sync true` p50/p99 through the
// split server (DEVBOXD_ROLE=all: the API server reaches the sandboxes over gRPC on a unix socket) against the
// code before the split (BENCH_BASE=<checkout>, one root process driving its sandboxes in process), in
// turns of the same run (each create and execute on both, one after the other).
// Run: BENCH_BASE=/path/to/before node --import tsx bench/node-agent.ts  (BENCH_ROUNDS=10, BENCH_PER_ROUND=10)
// BENCH_NETWORK=off runs both without box networking: code from before the per-node nft chains cannot share a
// network namespace's table with the code after, and the hop does not depend on the network.
import path from 'node:path';
import type Runloop from '@runloop/api-client';
import { startTestServer as startHere, type TestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const BASE = process.env.BENCH_BASE;
if (!BASE) throw new Error('BENCH_BASE=<checkout of the code before> is required');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 10);

const env = { DEVBOXD_LOG_LEVEL: 'warn', ...(process.env.BENCH_NETWORK === 'off' ? { DEVBOXD_NETWORK: 'off' } : {}) };
const mod = (await import(path.join(path.resolve(BASE), 'test/helpers/server.ts'))) as { startTestServer: typeof startHere };
const servers: [string, TestServer][] = [
  ['before (one process)', await mod.startTestServer(env)],
  ['after (API → RPC → agent)', await startHere(env)],
];
const clients = new Map<string, Runloop>(servers.map(([n, s]) => [n, s.client({ maxRetries: 0 })]));
const creates = new Map<string, number[]>(servers.map(([n]) => [n, []]));
const execs = new Map<string, number[]>(servers.map(([n]) => [n, []]));
const boxes = new Map<string, string>();

for (const [name] of servers) {
  const c = clients.get(name)!;
  boxes.set(name, (await c.devboxes.createAndAwaitRunning({})).id);
  for (let i = 0; i < 20; i++) await c.devboxes.executeSync(boxes.get(name)!, { command: 'true' }); // warm-up
}

// Each create and each execute goes to both servers in turn (the order flipping every time), so that a change
// in the machine's load (it is shared) falls on both alike; ROUNDS × PER_ROUND creates and five times as many
// executes per server.
const sides = (k: number) => (k % 2 ? [...servers].reverse() : servers);
for (let k = 0; k < ROUNDS * PER_ROUND; k++) {
  for (const [name] of sides(k)) {
    const c = clients.get(name)!;
    const t = performance.now();
    const d = await c.devboxes.createAndAwaitRunning({});
    creates.get(name)!.push(performance.now() - t);
    await c.devboxes.shutdown(d.id);
  }
  for (let j = 0; j < 5; j++) {
    for (const [name] of sides(k + j)) {
      const c = clients.get(name)!;
      const t = performance.now();
      await c.devboxes.executeSync(boxes.get(name)!, { command: 'true' });
      execs.get(name)!.push(performance.now() - t);
    }
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), n: s.length };
};
console.log(`\n| code | create_and_await_running p50 ms | p99 ms | execute_sync true p50 ms | p99 ms |`);
console.log('|---|---|---|---|---|');
for (const [name] of servers) {
  const c = stats(creates.get(name)!);
  const e = stats(execs.get(name)!);
  console.log(`| ${name} | ${c.p50.toFixed(2)} | ${c.p99.toFixed(2)} | ${e.p50.toFixed(2)} | ${e.p99.toFixed(2)} |`);
}
const [b, a] = servers.map(([n]) => [stats(creates.get(n)!).p50, stats(execs.get(n)!).p50] as const);
console.log(
  `\nadded by the hop (p50): create ${(a![0] - b![0]).toFixed(2)} ms, execute ${(a![1] - b![1]).toFixed(2)} ms (${creates.get(servers[0]![0])!.length} creates, ${execs.get(servers[0]![0])!.length} executes each)`,
);

for (const [name, s] of servers) {
  await clients.get(name)!.devboxes.shutdown(boxes.get(name)!);
  await s.stop();
}
