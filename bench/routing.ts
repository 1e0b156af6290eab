// What routing between API servers costs a GET (HTTP/2, the SDK's way, 32 in flight, one key): two servers on
// one PostgreSQL database with one cluster token, as test/pg/routing.test.ts starts them.
// - GET /v1/devboxes/{id}: its handler forwards by the record it reads anyway, so a box of this node costs
//   nothing more, running or suspended; one of the other node is forwarded (buffered) and answered there;
// - GET /v1/devboxes/{id}/usage of a suspended box (a route the routing front decides): the front's one read
//   by primary key (the box's node and status) before the handler's own; of a box of the other node, streamed
//   to that node's API server. A box running here costs the front no read (it knows from memory).
// With BENCH_BASE=<checkout of the code before>, one server of that code on PostgreSQL too: the same GETs
// without routing. Then the lookup alone, in process on the same database (32 in flight), beside the row read
// a GET does anyway. Rounds alternate; medians.
// Run: [BENCH_BASE=/path/to/before] node --import tsx bench/routing.ts   (BENCH_SECONDS=4, BENCH_ROUNDS=3)
import path from 'node:path';
import { openStore } from '../src/resources/core-store.js';
import { MODULE_SCHEMAS } from '../src/resources/index.js';
import { ADMIN_KEY, sharedTestDatabase, startTestServer as startHere, type TestServer } from '../test/helpers/server.js';
import { startClusterServer } from '../test/helpers/cluster.js';
import { load, type LoadResult } from './lib/load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const db = await sharedTestDatabase();
const servers: TestServer[] = [];
const databases = [db];
async function node(name: string, subnet: string): Promise<TestServer> {
  const s = await startClusterServer(name, subnet, db.url, { DEVBOXD_LOG_LEVEL: 'warn' });
  servers.push(s);
  return s;
}

/** A running box and a suspended one on node `want`, created through `via` (placement decides: retried until there). */
async function boxesOn(via: TestServer, nodeOf: (id: string) => Promise<string>, want: string): Promise<{ running: string; suspended: string }> {
  const api = via.client();
  const got: string[] = [];
  const others: string[] = [];
  while (got.length < 2) {
    const d = await api.devboxes.createAndAwaitRunning({});
    ((await nodeOf(d.id)) === want ? got : others).push(d.id);
  }
  await Promise.all(others.map((id) => api.devboxes.shutdown(id)));
  await api.devboxes.suspend(got[1]!);
  await api.devboxes.awaitSuspended(got[1]!);
  return { running: got[0]!, suspended: got[1]! };
}

/** `read` with `n` in flight for `seconds`: its rate and median latency. */
async function inFlight(read: () => Promise<unknown>, n: number, seconds: number): Promise<{ rps: number; p50: number }> {
  for (let i = 0; i < 200; i++) await read();
  const times: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (performance.now() < deadline) {
        const t = performance.now();
        await read();
        times.push(performance.now() - t);
      }
    }),
  );
  times.sort((x, y) => x - y);
  return { rps: times.length / ((performance.now() - t0) / 1000), p50: times[Math.floor(times.length / 2)]! };
}

try {
  const a = await node('bench-a', '10.93.0.0/16');
  await node('bench-b', '10.94.0.0/16');
  const pg = (await import('pg')).default;
  const sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  const nodeOf = async (id: string) => (await sql.query<{ node: string }>('SELECT node FROM devboxes WHERE id = $1', [id])).rows[0]!.node;
  const onA = await boxesOn(a, nodeOf, 'bench-a');
  const onB = await boxesOn(a, nodeOf, 'bench-b');
  await sql.end();

  const box = (id: string) => `/v1/devboxes/${id}`;
  const usage = (id: string) => `/v1/devboxes/${id}/usage`;
  const variants: [string, string, string][] = [
    ['GET box: running here', a.url, box(onA.running)],
    ['GET box: suspended here', a.url, box(onA.suspended)],
    ['GET box: on the other node (forwarded)', a.url, box(onB.running)],
    ['GET usage: suspended here (the front reads once)', a.url, usage(onA.suspended)],
    ['GET usage: suspended on the other node (streamed)', a.url, usage(onB.suspended)],
  ];
  const BASE = process.env.BENCH_BASE;
  if (BASE) {
    const mod = (await import(path.join(path.resolve(BASE), 'test/helpers/server.ts'))) as { startTestServer: typeof startHere };
    const baseDb = await sharedTestDatabase();
    databases.push(baseDb);
    const before = await mod.startTestServer({ DEVBOXD_DATABASE_URL: baseDb.url, DEVBOXD_LOG_LEVEL: 'warn', DEVBOXD_BOX_SUBNET: '10.95.0.0/16' });
    servers.push(before);
    const api = before.client();
    const [running, suspended] = [await api.devboxes.createAndAwaitRunning({}), await api.devboxes.createAndAwaitRunning({})];
    await api.devboxes.suspend(suspended.id);
    await api.devboxes.awaitSuspended(suspended.id);
    variants.unshift(
      ['before: GET box, running', before.url, box(running.id)],
      ['before: GET box, suspended', before.url, box(suspended.id)],
      ['before: GET usage, suspended', before.url, usage(suspended.id)],
    );
  }

  const results = new Map<string, LoadResult[]>(variants.map(([name]) => [name, []]));
  const headers = { authorization: `Bearer ${ADMIN_KEY}` };
  for (const [, url, path] of variants) await load({ url, path, headers, protocol: 'h2', concurrency: 32, seconds: 1 }); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url, path] of round % 2 ? [...variants].reverse() : variants) {
      const r = await load({ url, path, headers, protocol: 'h2', concurrency: 32, seconds: SECONDS });
      if (r.errors) throw new Error(`${name}: ${r.errors} errors`);
      results.get(name)!.push(r);
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(`\n| GET | req/s (median of ${ROUNDS}) | p50 ms |`);
  console.log('|---|---|---|');
  for (const [name] of variants) {
    const rs = results.get(name)!;
    console.log(`| ${name} | ${median(rs.map((r) => r.rps)).toFixed(0)} | ${median(rs.map((r) => r.p50ms)).toFixed(2)} |`);
  }

  const store = await openStore({ dataDir: '/nonexistent', databaseUrl: db.url, modules: MODULE_SCHEMAS });
  const reads: [string, () => Promise<unknown>][] = [
    ['locate: node and status (the routing read)', () => store.devboxes.locate(onA.suspended)],
    ['getById: the whole row (what a GET reads)', () => store.devboxes.getById(onA.suspended)],
  ];
  const rates = new Map<string, { rps: number; p50: number }[]>(reads.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, read] of round % 2 ? [...reads].reverse() : reads) rates.get(name)!.push(await inFlight(read, 32, SECONDS));
  }
  await store.close();
  console.log(`\n| store read, 32 in flight | reads/s (median of ${ROUNDS}) | p50 ms |`);
  console.log('|---|---|---|');
  for (const [name] of reads) {
    const rs = rates.get(name)!;
    console.log(`| ${name} | ${median(rs.map((r) => r.rps)).toFixed(0)} | ${median(rs.map((r) => r.p50)).toFixed(2)} |`);
  }
} finally {
  for (const s of servers.reverse()) await s.stop().catch((err) => console.error(err));
  for (const d of databases) await d.release();
}
