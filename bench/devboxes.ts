// Devbox create → running (and → first command) for 100 sequential and 100 concurrent creates, next to a
// bare `unshare` of the same namespaces measured in the same run; then server memory per idle devbox.
// Run: node --import tsx bench/devboxes.ts   (BENCH_N=100, BENCH_IDLE=1000)
import { spawnSync } from 'node:child_process';
import { startTestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const N = Number(process.env.BENCH_N ?? 100);
const IDLE = Number(process.env.BENCH_IDLE ?? 1000);

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${percentile(s, 50).toFixed(1)} | ${percentile(s, 99).toFixed(1)}`;
};

const server = await startTestServer({ DEVBOXD_LOG_LEVEL: 'warn' });
const api = server.client({ maxRetries: 0 });
const rows: string[] = [];

// Baseline: a bare namespace spawn, no rootfs, no cgroup.
const bare: number[] = [];
for (let i = 0; i < N; i++) {
  const t = performance.now();
  spawnSync('unshare', ['--mount', '--pid', '--net', '--uts', '--ipc', '--fork', 'true']);
  bare.push(performance.now() - t);
}
rows.push(`| bare \`unshare -mpnui --fork true\` | sequential | ${stats(bare)} | 100 % |`);

async function createRunning(): Promise<{ id: string; ms: number; ok: boolean }> {
  const t = performance.now();
  const d = await api.devboxes.createAndAwaitRunning({});
  return { id: d.id, ms: performance.now() - t, ok: d.status === 'running' };
}

await api.devboxes.shutdown((await createRunning()).id); // warm-up
const seq: number[] = [];
const firstCmd: number[] = [];
let ids: string[] = [];
for (let i = 0; i < N; i++) {
  const r = await createRunning();
  seq.push(r.ms);
  ids.push(r.id);
}
for (const id of ids) await api.devboxes.shutdown(id);
ids = [];
for (let i = 0; i < Math.min(N, 50); i++) {
  const t = performance.now();
  const d = await api.devboxes.createAndAwaitRunning({});
  await api.devboxes.executeSync(d.id, { command: 'true' });
  firstCmd.push(performance.now() - t);
  ids.push(d.id);
}
for (const id of ids) await api.devboxes.shutdown(id);
rows.push(`| devbox create_and_await_running | ${N} sequential | ${stats(seq)} | 100 % |`);
rows.push(`| devbox create → first command done | ${firstCmd.length} sequential | ${stats(firstCmd)} | 100 % |`);

const t0 = performance.now();
const conc = await Promise.all(Array.from({ length: N }, () => createRunning().catch(() => ({ id: '', ms: NaN, ok: false }))));
const wall = performance.now() - t0;
const ok = conc.filter((c) => c.ok);
rows.push(
  `| devbox create_and_await_running | ${N} concurrent (wall ${wall.toFixed(0)} ms) | ${stats(ok.map((c) => c.ms))} | ${((100 * ok.length) / N).toFixed(0)} % |`,
);
await Promise.all(ok.map((c) => api.devboxes.shutdown(c.id)));

let memRow = '';
if (IDLE > 0) {
  const before = server.rssBytes() / 2 ** 20;
  const idle: string[] = [];
  for (let i = 0; i < IDLE; i += 20) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, IDLE - i) }, () => api.devboxes.createAndAwaitRunning({})));
    idle.push(...batch.map((d) => d.id));
  }
  await new Promise((r) => setTimeout(r, 3000));
  const afterRss = server.rssBytes() / 2 ** 20;
  memRow = `\n${IDLE} idle devboxes: server RSS ${before.toFixed(0)} → ${afterRss.toFixed(0)} MiB, ${(((afterRss - before) * 1024) / IDLE).toFixed(0)} KiB per devbox`;
  for (let i = 0; i < idle.length; i += 50) await Promise.all(idle.slice(i, i + 50).map((id) => api.devboxes.shutdown(id)));
}
await server.stop();
console.log('\n| what | how | p50 ms | p99 ms | success |');
console.log('|---|---|---|---|---|');
console.log(rows.join('\n'));
console.log(memRow);
