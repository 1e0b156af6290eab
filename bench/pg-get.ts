// The store work of an authenticated GET /v1/devboxes/{id} on PostgreSQL, through devboxd's own stores and
// executor (postgres.js, pool of 10), 32 GETs in flight, no HTTP: the key read and the devbox read sent
// together (two statements: a hinted GET before the key moved into the box's statement) against the box read
// with its key in one statement (`DevboxStore.getWithKey`: a hinted GET now). Rounds alternate; reports
// GETs/s and the CPU each costs this process and this cluster's backends (from /proc), medians.
// Run: node --import tsx bench/pg-get.ts   (BENCH_SECONDS=4, BENCH_ROUNDS=5)
import { openStore } from '../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../src/resources/index.js';
import { startTestPostgres } from '../test/helpers/postgres.js';
import { account, devbox, key } from '../test/store/fixtures.js';
import { postgresCpuMicros } from './lib/cpu.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const cluster = await startTestPostgres();
const port = Number(new URL(cluster.url).port);
const store = await openStore({ dataDir: '/nonexistent', databaseUrl: await cluster.database(), modules: MODULE_SCHEMAS });
const acc = await account(store);
const k = key(acc.id);
await store.accounts.insertKey(k);
const box = devbox(acc.id);
await store.devboxes.insert(box);

const variants: [string, () => Promise<unknown>][] = [
  ['key and box, two statements at once', () => Promise.all([store.accounts.findKeyByHash(k.secretHash), store.devboxes.get(acc.id, box.id)])],
  ['box with its key, one statement', () => store.devboxes.getWithKey(k.secretHash, box.id)],
];

async function measure(get: () => Promise<unknown>) {
  for (let i = 0; i < 500; i++) await get(); // every connection has prepared the statements
  let n = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const cpu0 = process.cpuUsage();
  const pg0 = postgresCpuMicros(port);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < deadline) {
        await get();
        n++;
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { rate: n / wall, node: (cpu.user + cpu.system) / n, backend: (postgresCpuMicros(port) - pg0) / n };
}

const results = variants.map(() => [] as Awaited<ReturnType<typeof measure>>[]);
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < variants.length; i++) {
      const v = (i + round) % variants.length;
      results[v]!.push(await measure(variants[v]![1]));
    }
  }
} finally {
  await store.close();
  await cluster.stop();
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\n32 in flight, ${SECONDS} s a round, ${ROUNDS} rounds alternated; medians\n`);
console.log('| store work of a GET | GETs/s (each round) | CPU µs/GET: this process | backends | both |');
console.log('|---|---|---|---|---|');
variants.forEach(([name], i) => {
  const r = results[i]!;
  const node = med(r.map((x) => x.node));
  const backend = med(r.map((x) => x.backend));
  console.log(
    `| ${name} | ${r.map((x) => x.rate.toFixed(0)).join(', ')} → **${med(r.map((x) => x.rate)).toFixed(0)}** | ${node.toFixed(0)} | ${backend.toFixed(0)} | ${med(r.map((x) => x.node + x.backend)).toFixed(0)} |`,
  );
});
