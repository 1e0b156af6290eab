// Tunnel cost: the same stdlib web app in a box (test/fixtures/tunnel-app.py) reached directly from the host
// at the box's veth address, and through devboxd's tunnel on the main port (Host: {port}-{key}.tunnel.…), in
// the same run, alternating rounds. Latency: one request at a time over a kept-alive connection (p50/p99 of a
// small GET). Throughput: BENCH_MIB MiB downloads, one at a time and 4 in parallel, and the CPU each MiB costs
// the client, devboxd and the app (/proc), whose ratio is the share a CPU-bound machine would give.
// Run: node --import tsx bench/tunnels.ts   (BENCH_SECONDS=5 per latency round, BENCH_ROUNDS=3, BENCH_MIB=256)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ROOT, startTestServer } from '../test/helpers/server.js';
import { processCpuMicros } from './lib/cpu.js';
import { load } from './lib/load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MIB = Number(process.env.BENCH_MIB ?? 256);
const PORT = 8080;

const server = await startTestServer({ DEVBOXD_LOG_LEVEL: 'warn' });
const api = server.client({ maxRetries: 0 });
const serverPort = new URL(server.url).port;
const box = await api.devboxes.createAndAwaitRunning({
  file_mounts: { 'tunnel-app.py': fs.readFileSync(path.join(ROOT, 'test/fixtures/tunnel-app.py'), 'utf8') },
  entrypoint: `python3 $HOME/tunnel-app.py ${PORT}`,
  tunnel: {},
});
const host = `${PORT}-${box.tunnel!.tunnel_key}.tunnel.bench.test`;
// The box's address, as the runtime recorded it.
const stateFile = execFileSync('find', [server.dataDir, '-path', `*${box.id}*`, '-name', 'state.json']).toString().trim().split('\n')[0]!;
const boxAddress = (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { net: { boxAddress: string } }).net.boxAddress;

const ways = {
  direct: { url: `http://${boxAddress}:${PORT}`, headers: {} as Record<string, string> },
  tunnel: { url: `http://127.0.0.1:${serverPort}`, headers: { host } },
};

for (let i = 0; ; i++) {
  const r = await load({ ...ways.tunnel, path: '/hello', protocol: 'h1', concurrency: 1, seconds: 0.2 }).catch(() => null);
  if (r && r.errors === 0 && r.requests > 0) break;
  if (i > 100) throw new Error('the app in the box never answered');
  await new Promise((res) => setTimeout(res, 100));
}

// The app's process in the box (its threads included), for the CPU each path costs.
const appPid = Number(execFileSync('pgrep', ['-f', 'tunnel-app.py']).toString().trim().split('\n').at(-1));
const self = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
/** CPU µs per MiB moved: this process (the client), the server, the app in the box. */
const cpuPerMiB: Record<string, { client: number[]; server: number[]; app: number[] }> = { direct: { client: [], server: [], app: [] }, tunnel: { client: [], server: [], app: [] } };
async function withCpu<T>(way: keyof typeof ways, mib: number, fn: () => Promise<T>): Promise<T> {
  const read = () => [self(), processCpuMicros(server.pid()), processCpuMicros(appPid)] as const;
  const before = read();
  const r = await fn();
  const after = read();
  const c = cpuPerMiB[way]!;
  c.client.push((after[0] - before[0]) / mib);
  c.server.push((after[1] - before[1]) / mib);
  c.app.push((after[2] - before[2]) / mib);
  return r;
}

function download(way: keyof typeof ways, bytes: number): Promise<number> {
  const { url, headers } = ways[way];
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const t = performance.now();
    http
      .get({ host: u.hostname, port: u.port, path: `/bytes?n=${bytes}`, headers }, (res) => {
        let got = 0;
        res.on('data', (c: Buffer) => (got += c.length));
        res.on('end', () => (got === bytes ? resolve(performance.now() - t) : reject(new Error(`short read ${got}`))));
      })
      .on('error', reject);
  });
}

const lat: Record<string, { p50: number[]; p99: number[]; rps: number[] }> = { direct: { p50: [], p99: [], rps: [] }, tunnel: { p50: [], p99: [], rps: [] } };
const mbps: Record<string, { one: number[]; four: number[] }> = { direct: { one: [], four: [] }, tunnel: { one: [], four: [] } };
const bytes = MIB << 20;
for (let round = 0; round < ROUNDS; round++) {
  for (const way of (round % 2 ? ['tunnel', 'direct'] : ['direct', 'tunnel']) as Array<keyof typeof ways>) {
    const r = await load({ ...ways[way], path: '/hello', protocol: 'h1', concurrency: 1, seconds: SECONDS });
    if (r.errors) throw new Error(`${way}: ${r.errors} errors`);
    lat[way]!.p50.push(r.p50ms);
    lat[way]!.p99.push(r.p99ms);
    lat[way]!.rps.push(r.rps);
    mbps[way]!.one.push(bytes / 2 ** 20 / ((await withCpu(way, MIB, () => download(way, bytes))) / 1000));
    const t = performance.now();
    await withCpu(way, MIB, () => Promise.all(Array.from({ length: 4 }, () => download(way, bytes / 4))));
    mbps[way]!.four.push(bytes / 2 ** 20 / ((performance.now() - t) / 1000));
  }
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\n| path | p50 ms | p99 ms | req/s (1 in flight) | MiB/s (1 download) | MiB/s (4 downloads) |`);
console.log('|---|---|---|---|---|---|');
for (const way of ['direct', 'tunnel'] as const) {
  const l = lat[way]!;
  const m = mbps[way]!;
  console.log(`| ${way === 'direct' ? 'host → box (direct)' : 'host → devboxd tunnel → box'} | ${med(l.p50).toFixed(3)} | ${med(l.p99).toFixed(3)} | ${med(l.rps).toFixed(0)} | ${med(m.one).toFixed(0)} | ${med(m.four).toFixed(0)} |`);
}
console.log(`\nadded p50: ${(med(lat.tunnel!.p50) - med(lat.direct!.p50)).toFixed(3)} ms; throughput: ${((100 * med(mbps.tunnel!.one)) / med(mbps.direct!.one)).toFixed(0)} % (1), ${((100 * med(mbps.tunnel!.four)) / med(mbps.direct!.four)).toFixed(0)} % (4) of direct`);
const cpu = (way: 'direct' | 'tunnel') => {
  const c = cpuPerMiB[way]!;
  return { client: med(c.client), server: med(c.server), app: med(c.app), total: med(c.client) + med(c.server) + med(c.app) };
};
const [cd, ct] = [cpu('direct'), cpu('tunnel')];
console.log(`CPU µs per MiB downloaded (client / devboxd / app in the box): direct ${cd.client.toFixed(0)} / ${cd.server.toFixed(0)} / ${cd.app.toFixed(0)}; tunnel ${ct.client.toFixed(0)} / ${ct.server.toFixed(0)} / ${ct.app.toFixed(0)}; throughput by CPU: ${((100 * cd.total) / ct.total).toFixed(0)} % of direct`);
console.log(`rounds: ${ROUNDS}; per round p50 direct ${lat.direct!.p50.map((x) => x.toFixed(3)).join(', ')}; tunnel ${lat.tunnel!.p50.map((x) => x.toFixed(3)).join(', ')}`);
await api.devboxes.shutdown(box.id);
await server.stop();
