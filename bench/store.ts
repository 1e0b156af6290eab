// The store under the API: create_and_await_running p50/p99 and authenticated GET /v1/devboxes/{id}
// throughput, on SQLite and on PostgreSQL (a throwaway local cluster), next to a bare Fastify route measured
// in the same run, right before each store's GET. Besides req/s (which moves with whatever else the machine
// runs) it reports the CPU each request costs the load generator, the server and PostgreSQL's backends, read
// from /proc, and the share of the bare route's throughput those costs allow on a CPU-bound machine.
// Run: node --import tsx bench/store.ts  (BENCH_N=100, BENCH_SECONDS=5, BENCH_CONCURRENCY=32, BENCH_STORES=sqlite,postgres)
import { ADMIN_KEY, startTestServer } from '../test/helpers/server.js';
import { startTestPostgres } from '../test/helpers/postgres.js';
import { startBaseline } from './lib/baseline.js';
import { cpuDuring, postgresCpuMicros, processCpuMicros } from './lib/cpu.js';
import { load, percentile, type LoadResult } from './lib/load.js';

const N = Number(process.env.BENCH_N ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

const pg = await startTestPostgres();
const base = await startBaseline();
const common = { protocol: 'h2' as const, concurrency: CONCURRENCY, seconds: SECONDS };
const self = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** A GET load with the CPU per request of the load generator, the server and the PostgreSQL backends. */
async function measure(url: string, path: string, serverPid: number, headers?: Record<string, string>) {
  await load({ ...common, seconds: 1, url, path, headers }); // warm-up
  const { result, cpu } = await cpuDuring({ gen: self, server: () => processCpuMicros(serverPid), pg: postgresCpuMicros }, () => load({ ...common, url, path, headers }));
  const per = (k: string) => cpu[k]! / result.requests;
  return { r: result, gen: per('gen'), server: per('server'), pg: per('pg') };
}
type Measured = Awaited<ReturnType<typeof measure>>;
const fmt = (r: LoadResult) => `${Math.round(r.rps)} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)}`;
const cpuCells = (m: Measured) => `${m.gen.toFixed(0)} / ${m.server.toFixed(0)} / ${m.pg.toFixed(0)}`;
const total = (m: Measured) => m.gen + m.server + m.pg;

const rows: string[] = [];
for (const store of (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',') as ('sqlite' | 'postgres')[]) {
  const env: Record<string, string> = { DEVBOXD_LOG_LEVEL: 'warn' };
  if (store === 'postgres') env.DEVBOXD_DATABASE_URL = await pg.database();
  const server = await startTestServer(env);
  const api = server.client({ maxRetries: 0 });
  await api.devboxes.shutdown((await api.devboxes.createAndAwaitRunning({})).id); // warm-up
  const times: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    const d = await api.devboxes.createAndAwaitRunning({});
    times.push(performance.now() - t);
    ids.push(d.id);
  }
  times.sort((a, b) => a - b);
  const bare = await measure(base.url, '/hello', base.pid);
  const get = await measure(server.url, `/v1/devboxes/${ids[0]}`, server.pid(), { authorization: `Bearer ${ADMIN_KEY}` });
  for (const id of ids) await api.devboxes.shutdown(id);
  await server.stop();
  rows.push(`| bare Fastify (before ${store}) | — | — | ${fmt(bare.r)} | ${cpuCells(bare)} | baseline | baseline |`);
  const of = `${((100 * get.r.rps) / bare.r.rps).toFixed(0)} %`;
  const cpuOf = `${((100 * total(bare)) / total(get)).toFixed(0)} %`;
  rows.push(`| ${store} | ${percentile(times, 50).toFixed(1)} | ${percentile(times, 99).toFixed(1)} | ${fmt(get.r)} | ${cpuCells(get)} | ${of} | ${cpuOf} |`);
}
base.stop();
await pg.stop();
console.log(`\nGET: h2c, ${CONCURRENCY} concurrent, ${SECONDS} s; create: ${N} sequential; CPU µs per request: load generator / server / PostgreSQL\n`);
console.log('| target | create p50 ms | create p99 ms | GET req/s | GET p50 ms | GET p99 ms | CPU µs/req (gen / server / pg) | GET of bare (req/s) | of bare (by CPU) |');
console.log('|---|---|---|---|---|---|---|---|---|');
console.log(rows.join('\n'));
