// A 50-scenario benchmark with trivial scorers (command_scorer `true`), end to end through the SDK: start_run,
// an "agent" that completes each scenario run as soon as its devbox runs (complete scores it in the box, then
// shuts the box down), until the benchmark run is completed. Next to it, in the same run, the baselines: the
// same number of bare boxes created at once and shut down, and boxes that also run one command (what scoring
// adds per run). Run: node --import tsx bench/benchmark-run.ts   (BENCH_N=50)
// BENCH_POOL=K: a warm pool of K boxes, full before each part; the boxes then have the default make (a pool
// keeps named sizes only), and BENCH_POOL=0 measures the same make without a pool.
import type Runloop from '@runloop/api-client';
import { type PoolsListed, poolsCli, startTestServer } from '../test/helpers/server.js';

const N = Number(process.env.BENCH_N ?? 50);
const POOL = process.env.BENCH_POOL;
const SMALL = POOL === undefined ? { custom_disk_size: 1 } : {};
const server = await startTestServer({
  DEVBOXD_LOG_LEVEL: process.env.BENCH_LOG ? 'info' : 'warn',
  DEVBOXD_BENCHMARK_CONCURRENCY: String(N),
  DEVBOXD_WARM_POOL: POOL ?? '0',
});
const api: Runloop = server.client({ maxRetries: 0 });
// Fifty boxes at once on 2 busy cores: a request may wait minutes.
const LONG = { timeout: 600_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** With a pool: waits until it is full again (refills run between the parts, not during them). */
async function poolFull(): Promise<void> {
  if (!Number(POOL)) return;
  const ready = () => (JSON.parse(poolsCli({ DEVBOXD_DATA_DIR: server.dataDir }, 'list', '--json')) as PoolsListed).ready.reduce((n, r) => n + r.ready, 0);
  while (ready() < Number(POOL)) await sleep(250);
}

async function boxes(withCommand: boolean): Promise<number> {
  await poolFull();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: N }, async () => {
      const d = await api.devboxes.createAndAwaitRunning({ launch_parameters: SMALL }, LONG);
      if (withCommand) await api.devboxes.executeSync(d.id, { command: 'true' }, LONG);
      await api.devboxes.shutdown(d.id, LONG);
    }),
  );
  return performance.now() - t;
}

const ids: string[] = [];
for (let i = 0; i < N; i++) {
  const s = await api.scenarios.create({
    name: `bench-${i}`,
    input_context: { problem_statement: 'nothing to do' },
    scoring_contract: { scoring_function_parameters: [{ name: 'ok', weight: 1, scorer: { type: 'command_scorer', command: 'true' } }] },
  });
  ids.push(s.id);
}
const benchmark = await api.benchmarks.create({ name: 'bench-50', scenario_ids: ids });

try {
  await boxes(false); // warm-up: image, disk pool
  const bare = process.env.BENCH_SKIP_BASELINE ? NaN : await boxes(false);
  const withCommand = process.env.BENCH_SKIP_BASELINE ? NaN : await boxes(true);

  await poolFull();
  const t0 = performance.now();
  const run = await api.benchmarks.startRun({ benchmark_id: benchmark.id, runProfile: { launchParameters: SMALL } });
  const seen = new Set<string>();
  const scoredAt: number[] = [];
  const work: Promise<void>[] = [];
  while (seen.size < N) {
    const page = await api.benchmarkRuns.listScenarioRuns(run.id, { limit: N, include_total_count: false });
    for (const r of page.runs) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      work.push(
        (async () => {
          await api.devboxes.awaitRunning(r.devbox_id, { ...LONG, polling: { timeoutMs: 600_000 } });
          const done = await api.scenarios.runs.complete(r.id, LONG);
          if (done.state !== 'completed' || done.scoring_contract_result?.score !== 1) throw new Error(`run ${r.id}: ${JSON.stringify(done)}`);
          scoredAt.push(performance.now() - t0);
          if (process.env.BENCH_LOG) console.log(new Date().toISOString(), 'completed', r.id);
        })(),
      );
    }
    if (seen.size < N) await sleep(50);
  }
  await Promise.all(work);
  let final = await api.benchmarkRuns.retrieve(run.id);
  while (final.state === 'running') {
    await sleep(20);
    final = await api.benchmarkRuns.retrieve(run.id);
  }
  const wall = performance.now() - t0;

  const lastScored = Math.max(...scoredAt);
  console.log(
    `\n${N} scenarios, DEVBOXD_BENCHMARK_CONCURRENCY=${N}, DEVBOXD_WARM_POOL=${POOL ?? 0} (boxes: ${JSON.stringify(SMALL)}); benchmark run ${final.state}, score ${final.score}`,
  );
  console.log('| what | wall s | per second |');
  console.log('|---|---|---|');
  console.log(`| baseline: ${N} boxes create_and_await_running + shutdown, at once | ${(bare / 1000).toFixed(2)} | ${((N * 1000) / bare).toFixed(1)} boxes |`);
  console.log(`| baseline: the same + one \`execute_sync true\` each | ${(withCommand / 1000).toFixed(2)} | ${((N * 1000) / withCommand).toFixed(1)} boxes |`);
  console.log(
    `| benchmark run: start_run → last scenario run scored and completed | ${(lastScored / 1000).toFixed(2)} | ${((N * 1000) / lastScored).toFixed(1)} scenario runs |`,
  );
  console.log(`| benchmark run: start_run → benchmark run completed | ${(wall / 1000).toFixed(2)} | ${((N * 1000) / wall).toFixed(1)} scenario runs |`);
  if (process.env.BENCH_LOG)
    console.log(
      server
        .output()
        .split('\n')
        .filter((l) => /benchmark|scenario run/i.test(l))
        .join('\n'),
    );
} finally {
  await server.stop();
}
