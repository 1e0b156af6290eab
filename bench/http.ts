// Requests/s and latency of authenticated GETs (/v1/accounts/me, /v1/devboxes/{id}) against a bare Fastify
// route, over HTTP/1.1 and h2c, measured in the same run. Run: node --import tsx bench/http.ts
import { ADMIN_KEY, startTestServer } from '../test/helpers/server.js';
import { startBaseline } from './lib/baseline.js';
import { load, type LoadResult } from './lib/load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

const fmt = (r: LoadResult) => `${Math.round(r.rps)} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)} | ${r.errors}`;

const server = await startTestServer({ DEVBOXD_LOG_LEVEL: 'warn' });
const base = await startBaseline();
const box = await server.client().devboxes.createAndAwaitRunning({ name: 'bench-http' });
const rows: string[] = [];
for (const protocol of ['h1', 'h2'] as const) {
  const common = { protocol, concurrency: CONCURRENCY, seconds: SECONDS };
  await load({ ...common, seconds: 1, url: base.url, path: '/hello' }); // warm-up
  const b = await load({ ...common, url: base.url, path: '/hello' });
  const headers = { authorization: `Bearer ${ADMIN_KEY}` };
  await load({ ...common, seconds: 1, url: server.url, path: '/v1/accounts/me', headers });
  const d = await load({ ...common, url: server.url, path: '/v1/accounts/me', headers });
  const g = await load({ ...common, url: server.url, path: `/v1/devboxes/${box.id}`, headers });
  const of = (r: LoadResult) => `${((100 * r.rps) / b.rps).toFixed(0)} %`;
  rows.push(`| ${protocol} | bare Fastify GET /hello | ${fmt(b)} | |`);
  rows.push(`| ${protocol} | devboxd GET /v1/accounts/me | ${fmt(d)} | ${of(d)} |`);
  rows.push(`| ${protocol} | devboxd GET /v1/devboxes/{id} | ${fmt(g)} | ${of(g)} |`);
}
base.stop();
await server.stop();
console.log(`\n${CONCURRENCY} concurrent requests, ${SECONDS} s per row\n`);
console.log('| protocol | target | req/s | p50 ms | p99 ms | errors | of baseline |');
console.log('|---|---|---|---|---|---|---|');
console.log(rows.join('\n'));
