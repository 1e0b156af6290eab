// Output flood and read_file_contents memory (issue 11, items 2 and 6): /healthz latency while a box runs
// `yes`, the bytes the flood leaves on the host and the server's RSS; then 8 and 32 concurrent
// read_file_contents of a 60 MiB file: server RSS growth, wall time, answers by status.
// Run: node --import tsx bench/output.ts
//   BENCH_SECONDS=20 (flood length), BENCH_BASE=<dir>: also run the same against the server in <dir> (a
//   checkout of the code before, with node_modules, native/build and data/images linked) as the baseline.
import fs from 'node:fs';
import path from 'node:path';
import { ADMIN_KEY, startTestServer as startHere, type TestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const FILE_BYTES = 60 * 1024 * 1024;
const MiB = 1024 * 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const rows: string[] = [];

function dirBytes(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let sum = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    sum += e.isDirectory() ? dirBytes(p) : fs.statSync(p).size;
  }
  return sum;
}

/** Execution output on the host: the spool and, since output is sealed into blobs, the blob store's part. */
const outputBytes = (s: TestServer) => dirBytes(path.join(s.apiDir, 'executions')) + dirBytes(path.join(s.apiDir, 'blobs', 'executions'));

async function healthz(url: string, until: () => boolean, server: TestServer, rss: number[]): Promise<number[]> {
  const lat: number[] = [];
  while (!until()) {
    const t = performance.now();
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    lat.push(performance.now() - t);
    rss.push(rssOf(server));
    await sleep(20);
  }
  return lat;
}

// The API server's and the node agent's together: output passes through both.
const rssOf = (s: TestServer) => s.rssBytes();

async function readMany(server: TestServer, boxId: string, n: number) {
  const peak = { rss: rssOf(server) };
  const timer = setInterval(() => (peak.rss = Math.max(peak.rss, rssOf(server))), 20);
  const t = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`${server.url}/v1/devboxes/${boxId}/read_file_contents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ file_path: 'big.txt' }),
      });
      const body = await res.arrayBuffer();
      return res.status === 200 && body.byteLength !== FILE_BYTES ? -1 : res.status;
    }),
  );
  const wall = performance.now() - t;
  clearInterval(timer);
  const count = (s: number) => statuses.filter((x) => x === s).length;
  return { peak: peak.rss, wall, ok: count(200), busy: count(429), other: n - count(200) - count(429) };
}

async function measure(label: string, start: typeof startHere): Promise<void> {
  const server = await start({ DEVBOXD_LOG_LEVEL: 'warn' });
  try {
    const api = server.client({ maxRetries: 0 });
    const box = await server.sdk().devbox.create({ name: 'bench-output' });
    const rss: number[] = [];
    const idle = await healthz(
      server.url,
      (
        (end) => () =>
          Date.now() > end
      )(Date.now() + 3000),
      server,
      rss,
    );
    const e = await api.devboxes.executeAsync(box.id, { command: `timeout ${SECONDS} yes` });
    const floodEnd = Date.now() + SECONDS * 1000;
    const flood = await healthz(server.url, () => Date.now() > floodEnd, server, rss);
    const done = await api.devboxes.executions.awaitCompleted(box.id, e.execution_id);
    const onHost = outputBytes(server);
    // Untruncated output is all on the host; truncated output's end offset comes from its stream.
    const written = done.stdout_truncated && onHost < 256 * MiB ? await lastOffset(server, box.id, e.execution_id) : onHost;
    for (const [what, xs] of [
      ['idle', idle],
      [`during a ${SECONDS} s \`yes\` flood`, flood],
    ] as const) {
      const s = sorted(xs);
      rows.push(`| ${label} | /healthz ${what} | ${s.length} | ${fmt(percentile(s, 50))} | ${fmt(percentile(s, 99))} | ${fmt(s.at(-1)!)} |`);
    }
    rows.push(
      `| ${label} | flood: ${fmt(written / MiB)} MiB of output (${fmt(written / MiB / SECONDS)} MiB/s), ${fmt(onHost / MiB)} MiB kept on the host, ` +
        `truncated ${done.stdout_truncated}; server RSS max ${fmt(Math.max(...rss) / MiB)} MiB | | | | |`,
    );
    await box.shutdown();
    await sleep(500);
    rows.push(`| ${label} | after shutdown: ${fmt(outputBytes(server) / MiB)} MiB of output left on the host | | | | |`);

    const box2 = await server.sdk().devbox.create({ name: 'bench-files' });
    await api.devboxes.execute(box2.id, { command: `yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c ${FILE_BYTES} > big.txt` });
    const before = rssOf(server);
    for (const n of [8, 32]) {
      const r = await readMany(server, box2.id, n);
      rows.push(
        `| ${label} | ${n} concurrent read_file_contents of 60 MiB: RSS peak ${fmt(r.peak / MiB)} MiB (+${fmt((r.peak - before) / MiB)} over ${fmt(before / MiB)} before any read), ` +
          `wall ${fmt(r.wall)} ms, ${r.ok} × 200, ${r.busy} × 429${r.other ? `, ${r.other} other` : ''} | | | | |`,
      );
      await sleep(2000);
    }
    await box2.shutdown();
  } finally {
    await server.stop();
  }
}

/** The stream's end offset, from its SSE endpoint. */
async function lastOffset(server: TestServer, boxId: string, id: string): Promise<number> {
  let offset = 0;
  const api = server.client({ maxRetries: 0 });
  for await (const c of await api.devboxes.executions.streamStdoutUpdates(boxId, id, { offset: '0' })) offset = c.offset ?? offset;
  return offset;
}

if (process.env.BENCH_BASE) {
  const mod = (await import(path.join(path.resolve(process.env.BENCH_BASE), 'test/helpers/server.ts'))) as { startTestServer: typeof startHere };
  await measure('before', mod.startTestServer);
}
await measure('after', startHere);

console.log('| code | measure | samples | p50 ms | p99 ms | max ms |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
