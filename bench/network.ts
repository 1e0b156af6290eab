// Box networking's cost at create: create_and_await_running p50/p99 on a server with box networking
// (DEVBOXD_NETWORK=on: veth made by boxinit, the box's nftables chains, its DNS socket) next to one without
// (DEVBOXD_NETWORK=off: loopback only), in the same run, alternating rounds so machine load hits both alike.
// Run: node --import tsx bench/network.ts   (BENCH_CREATES=100 per server)
import { startTestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const CREATES = Number(process.env.BENCH_CREATES ?? 100);
const ROUND = 10;

const servers = {
  off: await startTestServer({ DEVBOXD_NETWORK: 'off', DEVBOXD_LOG_LEVEL: 'warn' }),
  on: await startTestServer({ DEVBOXD_NETWORK: 'on', DEVBOXD_LOG_LEVEL: 'warn' }),
};
const apis = { off: servers.off.client({ maxRetries: 0 }), on: servers.on.client({ maxRetries: 0 }) };
const times: Record<'on' | 'off', number[]> = { on: [], off: [] };

// Warm-up: the first create of each server mounts and caches what later ones reuse.
for (const k of ['off', 'on'] as const) {
  const b = await apis[k].devboxes.createAndAwaitRunning({});
  await apis[k].devboxes.shutdown(b.id);
}
for (let done = 0; done < CREATES; done += ROUND) {
  for (const k of (done / ROUND) % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
    const ids: string[] = [];
    for (let i = 0; i < ROUND; i++) {
      const t = performance.now();
      const b = await apis[k].devboxes.createAndAwaitRunning({});
      times[k].push(performance.now() - t);
      ids.push(b.id);
    }
    await Promise.all(ids.map((id) => apis[k].devboxes.shutdown(id)));
  }
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
};
const off = stat(times.off);
const on = stat(times.on);
console.log(`\n| box networking | creates | p50 ms | p99 ms | added p50 ms |`);
console.log('|---|---|---|---|---|');
console.log(`| off (loopback only) | ${times.off.length} | ${off.p50.toFixed(1)} | ${off.p99.toFixed(1)} | baseline |`);
console.log(`| on (veth, nftables chains, DNS socket) | ${times.on.length} | ${on.p50.toFixed(1)} | ${on.p99.toFixed(1)} | ${(on.p50 - off.p50).toFixed(1)} |`);
await servers.off.stop();
await servers.on.stop();
