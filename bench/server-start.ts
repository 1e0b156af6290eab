// What a server start costs: wall time until `devboxd serve` listens, and the CPU its processes spent by then
// (supervisor, node agent and API server; their helper processes not counted), against the code before
// (BENCH_BASE=<checkout>, one process), in alternating rounds of the same run. A test run starts some 150
// servers, so this is also what the suite pays per server.
// Run: BENCH_BASE=/path/to/before node --import tsx bench/server-start.ts  (BENCH_ROUNDS=6), or compiled:
// node scripts/build.mjs && BENCH_BASE=... node dist/bench/server-start.js (the base's dist/ built too).
// BENCH_NETWORK=off: code from before the per-node nft chains cannot share a network namespace's table with
// the code after.
import fs from 'node:fs';
import path from 'node:path';
import { startTestServer as startHere, type TestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const BASE = process.env.BENCH_BASE;
if (!BASE) throw new Error('BENCH_BASE=<checkout of the code before> is required');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const env = { DEVBOXD_LOG_LEVEL: 'warn', ...(process.env.BENCH_NETWORK === 'off' ? { DEVBOXD_NETWORK: 'off' } : {}) };
// Compiled (dist/bench, what the tests run: each side's dist/devboxd.js) or through tsx (each side's TypeScript,
// as `npm start` runs it): the base is taken the same way.
const compiled = import.meta.url.endsWith('.js');
const helper = compiled ? 'dist/test/helpers/server.js' : 'test/helpers/server.ts';
const mod = (await import(path.join(path.resolve(BASE), helper))) as { startTestServer: typeof startHere };
const starts: [string, typeof startHere][] = [
  // BENCH_BASE_LABEL names the base when it is not the code before the split (a later commit).
  [process.env.BENCH_BASE_LABEL ?? 'before (one process)', mod.startTestServer],
  ['after (supervisor, agent, API server)', startHere],
];

/** CPU milliseconds of a process (user + system, its waited-for children included). */
function cpuMs(pid: number | string): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const tick = 10; // USER_HZ 100
  return (Number(f[11]) + Number(f[12])) * tick;
}

/** The server's Node processes: the one the test started and, after the split, its two Node children. */
function nodeProcesses(s: TestServer): number[] {
  const top = s.supervisorPid?.() ?? s.pid();
  const kids = fs.readFileSync(`/proc/${top}/task/${top}/children`, 'utf8').trim().split(' ').filter(Boolean);
  const node = kids.filter((k) => fs.readFileSync(`/proc/${k}/cmdline`, 'utf8').includes('devboxd.js'));
  return [top, ...node.map(Number)];
}

const wall = new Map<string, number[]>(starts.map(([n]) => [n, []]));
const cpu = new Map<string, number[]>(starts.map(([n]) => [n, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, start] of round % 2 ? [...starts].reverse() : starts) {
    const t = performance.now();
    const s = await start(env);
    wall.get(name)!.push(performance.now() - t);
    cpu.get(name)!.push(nodeProcesses(s).reduce((n, pid) => n + cpuMs(pid), 0));
    await s.stop();
  }
}

const p50 = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
console.log('\n| code | start → listening p50 ms | CPU of its Node processes by then, p50 ms |');
console.log('|---|---|---|');
for (const [name] of starts) console.log(`| ${name} | ${p50(wall.get(name)!).toFixed(0)} | ${p50(cpu.get(name)!).toFixed(0)} |`);
console.log(`\n${ROUNDS} starts each, alternating; load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
