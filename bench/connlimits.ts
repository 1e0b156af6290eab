// What the connection limits (headers timeout, caps on connections before their headers, HTTP/2 reset
// bound; issue 30) cost: authenticated GET /v1/accounts/me req/s (HTTP/1.1 kept alive, HTTP/1.1 a new
// connection each, h2c) and SSE first-byte latency (GET /v1/axons/{id}/subscribe/sse until its first byte,
// h2c and HTTP/1.1 on a new connection each), against the code before in the same run.
// BENCH_BASE=<checkout of the code before> (node_modules, native/build, data linked, built) is required; the
// two servers alternate rounds (BENCH_ROUNDS), medians reported.
// Run: BENCH_BASE=/path/to/before node --import tsx bench/connlimits.ts  (BENCH_SECONDS=3, BENCH_ROUNDS=6, BENCH_CONCURRENCY=32, BENCH_SSE=200)
import http from 'node:http';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_KEY, startTestServer, type TestServer } from '../test/helpers/server.js';
import { load, percentile } from './lib/load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const SSE = Number(process.env.BENCH_SSE ?? 200);
const BASE = process.env.BENCH_BASE;
if (!BASE) throw new Error('BENCH_BASE=<checkout of the code before> is required');

const headers = { authorization: `Bearer ${ADMIN_KEY}` };
const env = { DEVBOXD_LOG_LEVEL: 'warn' };
const before = (await import(path.join(path.resolve(BASE), 'test/helpers/server.ts'))) as { startTestServer: typeof startTestServer };
const servers: Record<'before' | 'after', TestServer> = { before: await before.startTestServer(env), after: await startTestServer(env) };
const axons: Record<string, string> = {};
for (const [k, s] of Object.entries(servers)) axons[k] = (await s.client().axons.create({})).id;

/** Requests/s of GETs, each on a new HTTP/1.1 connection (what the pending-connection accounting sees most). */
async function freshConnections(url: string): Promise<number> {
  const u = new URL(url);
  let n = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const start = performance.now();
  const worker = async () => {
    while (performance.now() < deadline) {
      await new Promise<void>((resolve, reject) => {
        http
          .get({ host: u.hostname, port: u.port, path: '/v1/accounts/me', headers, agent: false }, (res) => res.resume().on('end', resolve))
          .on('error', reject);
      });
      n++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return n / ((performance.now() - start) / 1000);
}

/** ms from sending a subscribe/sse request to its first byte, one at a time: h2c on one session, or HTTP/1.1 on a new connection each. */
async function sseFirstByte(url: string, axon: string, protocol: 'h1' | 'h2'): Promise<number> {
  const p = `/v1/axons/${axon}/subscribe/sse`;
  const times: number[] = [];
  let session = protocol === 'h2' ? http2.connect(url) : undefined;
  for (let i = 0; i < SSE; i++) {
    // Each stream is cancelled after its first byte: a fresh session every 100 stays under the reset bound.
    if (session && i > 0 && i % 100 === 0) {
      session.close();
      session = http2.connect(url);
      await new Promise((r) => session!.once('connect', r));
    }
    const t = performance.now();
    await new Promise<void>((resolve, reject) => {
      if (session) {
        const s = session.request({ ':path': p, ...headers });
        s.once('data', () => (s.close(http2.constants.NGHTTP2_CANCEL), resolve()));
        s.on('error', reject);
        return;
      }
      const req = http.get(`${url}${p}`, { headers, agent: false }, (res) => res.once('data', () => (req.destroy(), resolve())));
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    });
    times.push(performance.now() - t);
    // A pause: the latency of a stream asked of a server at rest, not of one still ending the stream cancelled
    // just before (the code before never ended those, and back to back it would look faster for it).
    await new Promise((r) => setTimeout(r, 10));
  }
  session?.close();
  return percentile(
    times.sort((a, b) => a - b),
    50,
  );
}

type Row = Record<string, number[]>;
const results: Record<'before' | 'after', Row> = { before: {}, after: {} };
const add = (code: 'before' | 'after', k: string, v: number) => (results[code][k] ??= []).push(v);

for (let round = 0; round < ROUNDS; round++) {
  // Alternate which goes first, so neither always runs on a warmer (or busier) machine.
  const order = round % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const);
  for (const code of order) {
    const url = servers[code].url;
    for (const protocol of ['h1', 'h2'] as const) {
      const r = await load({ url, path: '/v1/accounts/me', headers, protocol, concurrency: CONCURRENCY, seconds: SECONDS });
      if (r.errors) throw new Error(`${code} ${protocol}: ${r.errors} errors`);
      add(code, `GET req/s ${protocol === 'h1' ? 'HTTP/1.1 kept alive' : 'h2c'}`, r.rps);
    }
    add(code, 'GET req/s HTTP/1.1, new connection each', await freshConnections(url));
    add(code, 'SSE first byte p50 ms h2c', await sseFirstByte(url, axons[code]!, 'h2'));
    add(code, 'SSE first byte p50 ms HTTP/1.1, new connection each', await sseFirstByte(url, axons[code]!, 'h1'));
  }
  process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
}
for (const s of Object.values(servers)) await s.stop();

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
console.log(
  `\n${new Date().toISOString()}, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}, ${ROUNDS} alternating rounds of ${SECONDS} s, ${CONCURRENCY} concurrent; SSE ${SSE} sequential\n`,
);
console.log('| measure | before (median) | after (median) | after / before | rounds before | rounds after |');
console.log('|---|---|---|---|---|---|');
for (const k of Object.keys(results.after)) {
  const b = median(results.before[k]!);
  const a = median(results.after[k]!);
  const fmt = (xs: number[]) => xs.map((x) => (x >= 100 ? Math.round(x) : x.toFixed(2))).join(', ');
  console.log(
    `| ${k} | ${b >= 100 ? Math.round(b) : b.toFixed(2)} | ${a >= 100 ? Math.round(a) : a.toFixed(2)} | ${((100 * a) / b).toFixed(1)} % | ${fmt(results.before[k]!)} | ${fmt(results.after[k]!)} |`,
  );
}
