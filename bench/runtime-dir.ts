// What the axon SQL runtime directory (<data>/runtime/axon-sql, src/resources/axons/sql-runtime.ts) adds to a
// server's start: its preparation before the server listens (the bundle's inputs hashed, the files compared,
// what differs written) and the probe that runs beside the rest of the start (one sh as the SQL uid), both
// read from the server's own debug log, next to the whole start (spawn → listening) measured in the same
// round. Two kinds of start in alternating rounds: warm (the same data dir again: nothing to write) and fresh
// (a new data dir, as every test server: the files written, the bundle taken from node_modules/.cache).
// Run: node --import tsx bench/runtime-dir.ts   (BENCH_ROUNDS=10; as root for the probe)
import { startTestServer, type TestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const ENV = { DEVBOXD_LOG_LEVEL: 'debug' };
const PREPARED = 'axon SQL runtime directory ready';
const PROBED = 'axon SQL processes can use their runtime directory';

/** One start's milliseconds: the whole start, the preparation, the probe. */
type Sample = Record<'start' | 'prepare' | 'probe', number>;
const samples: Record<'warm' | 'fresh', Sample[]> = { warm: [], fresh: [] };

/** The `ms` of the log line `msg`, waiting for it (the probe ends after the server listens). */
async function logged(s: TestServer, msg: string): Promise<number> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const line of s.output().split('\n')) {
      if (!line.includes(msg)) continue;
      return (JSON.parse(line) as { ms: number }).ms;
    }
    if (Date.now() > deadline) throw new Error(`no "${msg}" in the server's log:\n${s.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function measure(s: TestServer, start: number): Promise<Sample> {
  const prepare = await logged(s, PREPARED);
  const probe = process.getuid?.() === 0 ? await logged(s, PROBED) : NaN;
  return { start, prepare, probe };
}

// The warm server, started once (its data dir then holds a current runtime directory).
const warm = await startTestServer(ENV);
await logged(warm, PREPARED);
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of round % 2 ? (['fresh', 'warm'] as const) : (['warm', 'fresh'] as const)) {
    if (kind === 'warm') {
      const t = performance.now();
      await warm.restart();
      samples.warm.push(await measure(warm, performance.now() - t));
    } else {
      const t = performance.now();
      const fresh = await startTestServer(ENV);
      samples.fresh.push(await measure(fresh, performance.now() - t));
      await fresh.stop();
    }
  }
}
await warm.stop();

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
const max = (xs: number[]) => Math.max(...xs);
console.log(`\n${ROUNDS} rounds, medians (max)\n`);
console.log('| start | whole start to listening ms (baseline) | preparation before listening ms | probe beside the start ms |');
console.log('|---|---|---|---|');
for (const kind of ['warm', 'fresh'] as const) {
  const s = samples[kind];
  const col = (k: keyof Sample) => `${median(s.map((x) => x[k])).toFixed(1)} (${max(s.map((x) => x[k])).toFixed(1)})`;
  console.log(`| ${kind} | ${col('start')} | ${col('prepare')} | ${col('probe')} |`);
}
