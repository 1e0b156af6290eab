// The store under the API: create_and_await_running p50/p99 and authenticated GET /v1/devboxes/{id}
// throughput, on SQLite and on PostgreSQL (a throwaway local cluster), next to a bare Fastify route measured
// in the same run. Run: node --import tsx bench/store.ts
//   (BENCH_N=100, BENCH_SECONDS=5, BENCH_CONCURRENCY=32, BENCH_STORES=sqlite,postgres)
import { ADMIN_KEY, startTestServer } from '../test/helpers/server.js';
import { startTestPostgres } from '../test/helpers/postgres.js';
import { startBaseline } from './lib/baseline.js';
import { load, percentile, type LoadResult } from './lib/load.js';

const N = Number(process.env.BENCH_N ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

const fmt = (r: LoadResult) => `${Math.round(r.rps)} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)}`;
const pg = await startTestPostgres();
const base = await startBaseline();
const rows: string[] = [];

const common = { protocol: 'h2' as const, concurrency: CONCURRENCY, seconds: SECONDS };
await load({ ...common, seconds: 1, url: base.url, path: '/hello' }); // warm-up
const bare = await load({ ...common, url: base.url, path: '/hello' });
rows.push(`| bare Fastify | GET /hello | — | — | ${fmt(bare)} | baseline |`);

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
  const path = `/v1/devboxes/${ids[0]}`;
  const headers = { authorization: `Bearer ${ADMIN_KEY}` };
  await load({ ...common, seconds: 1, url: server.url, path, headers }); // warm-up
  const get = await load({ ...common, url: server.url, path, headers });
  for (const id of ids) await api.devboxes.shutdown(id);
  await server.stop();
  const of = `${((100 * get.rps) / bare.rps).toFixed(0)} %`;
  rows.push(`| ${store} | create_and_await_running ×${N}, GET /v1/devboxes/{id} | ${percentile(times, 50).toFixed(1)} | ${percentile(times, 99).toFixed(1)} | ${fmt(get)} | ${of} |`);
}
base.stop();
await pg.stop();
console.log(`\nGET: h2c, ${CONCURRENCY} concurrent, ${SECONDS} s; create: ${N} sequential\n`);
console.log('| store | what | create p50 ms | create p99 ms | GET req/s | GET p50 ms | GET p99 ms | GET of baseline |');
console.log('|---|---|---|---|---|---|---|---|');
console.log(rows.join('\n'));
