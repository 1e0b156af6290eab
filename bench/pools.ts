// Warm pools (issue 27): create_and_await_running p50/p99 from a pool against the cold path, a burst of
// BENCH_BURST creates at once with a pool that size against none, and create → first command (the ComputeSDK
// leaderboard's figure: create, then `echo hi`) both ways. Two servers in the same run, one with
// DEVBOXD_WARM_POOL and one without, taking turns (the order flipping each round).
// Run: node --import tsx bench/pools.ts   (BENCH_ROUNDS=10, BENCH_PER_ROUND=5, BENCH_BURST=100)
import type Runloop from '@runloop/api-client';
import { type PoolsListed, poolsCli, startTestServer, type TestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 5);
const BURST = Number(process.env.BENCH_BURST ?? 100);
const LONG = { timeout: 600_000 };
const env = { DEVBOXD_LOG_LEVEL: 'warn' };

const sides: { name: string; s: TestServer; api: Runloop; pool: number }[] = [];
for (const [name, pool] of [
  ['pool on', PER_ROUND],
  ['pool off', 0],
] as const) {
  const s = await startTestServer({ ...env, DEVBOXD_WARM_POOL: String(pool) });
  // The SDK's own retries (2): a burst on one HTTP/2 session now and then has a stream refused (REFUSED_STREAM), which
  // the SDK retries as a user's client would.
  sides.push({ name, s, api: s.client(), pool });
}
const readyIds = (s: TestServer) => (JSON.parse(poolsCli({ DEVBOXD_DATA_DIR: s.dataDir }, 'list', '--json')) as PoolsListed).ready.flatMap((r) => r.devbox_ids);
async function filled(side: (typeof sides)[number], want: number): Promise<Set<string>> {
  for (const end = Date.now() + 600_000; ; ) {
    const ids = readyIds(side.s);
    if (ids.length >= want) return new Set(ids);
    if (Date.now() > end) throw new Error(`${side.name}: the pool did not fill`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${percentile(s, 50).toFixed(1)} | ${percentile(s, 99).toFixed(1)}`;
};

try {
  for (const { api } of sides) for (let i = 0; i < 3; i++) await api.devboxes.shutdown((await api.devboxes.createAndAwaitRunning({})).id); // warm-up
  const create = new Map(sides.map((x) => [x.name, [] as number[]]));
  const first = new Map(sides.map((x) => [x.name, [] as number[]]));
  let taken = 0;
  for (let k = 0; k < ROUNDS; k++) {
    // Each round starts with the pool full (refills run between rounds), so every create of it can take one.
    const pooled = await filled(sides[0]!, PER_ROUND);
    for (let j = 0; j < PER_ROUND; j++) {
      for (const side of (k + j) % 2 ? [...sides].reverse() : sides) {
        const t = performance.now();
        const d = await side.api.devboxes.createAndAwaitRunning({});
        const running = performance.now() - t;
        const r = await side.api.devboxes.executeSync(d.id, { command: 'echo hi' });
        if (r.stdout !== 'hi\n') throw new Error(`echo hi said ${JSON.stringify(r.stdout)}`);
        create.get(side.name)!.push(running);
        first.get(side.name)!.push(performance.now() - t);
        if (pooled.has(d.id)) taken++;
        await side.api.devboxes.shutdown(d.id);
      }
    }
  }
  console.log(
    `\n${ROUNDS} rounds of ${PER_ROUND} creates per server, pool of ${PER_ROUND} refilled between rounds; ${taken} of ${ROUNDS * PER_ROUND} took a pooled box`,
  );
  console.log('| server | create_and_await_running p50 ms | p99 ms | create → `echo hi` done p50 ms | p99 ms |');
  console.log('|---|---|---|---|---|');
  for (const { name } of sides) console.log(`| ${name} | ${stats(create.get(name)!)} | ${stats(first.get(name)!)} |`);

  // The burst: BURST creates at once, each timed alone; first on the server without a pool (the other one
  // keeping none meanwhile, so no refill runs beside it), then on the one with a pool of BURST, full first.
  const cli = { DEVBOXD_DATA_DIR: sides[0]!.s.dataDir };
  poolsCli(cli, 'set', 'SMALL', '0');
  for (const end = Date.now() + 120_000; (JSON.parse(poolsCli(cli, 'list', '--json')) as PoolsListed).ready.some((r) => r.ready || r.booting); ) {
    if (Date.now() > end) throw new Error('the pool did not empty');
    await new Promise((r) => setTimeout(r, 200));
  }
  const burst = new Map<string, number[]>();
  let burstTaken = 0;
  for (const side of [...sides].reverse()) {
    if (side.pool) poolsCli(cli, 'set', 'SMALL', String(BURST));
    const pooled = side.pool ? await filled(side, BURST) : new Set<string>();
    const times = await Promise.all(
      Array.from({ length: BURST }, async () => {
        const t = performance.now();
        const d = await side.api.devboxes.createAndAwaitRunning({}, LONG);
        return { ms: performance.now() - t, id: d.id };
      }),
    );
    burst.set(
      side.name,
      times.map((x) => x.ms),
    );
    if (side.pool) burstTaken = times.filter((x) => pooled.has(x.id)).length;
    await Promise.all(times.map((x) => side.api.devboxes.shutdown(x.id, LONG)));
  }
  console.log(`\nburst of ${BURST} create_and_await_running at once (pool of ${BURST} full before it; ${burstTaken} took a pooled box)`);
  console.log('| server | p50 ms | p99 ms |');
  console.log('|---|---|---|');
  for (const { name } of sides) console.log(`| ${name} | ${stats(burst.get(name)!)} |`);
} finally {
  for (const { s } of sides) await s.stop();
}
