/**
 * Backup of a data dir holding BENCH_SNAPSHOT_MIB (default 1024) of snapshots: `node scripts/build.mjs && node
 * dist/bench/backup.js` (root; compiled, so the command starts as it does for an operator, not through tsx). A
 * server (SQLite) gets BENCH_BOXES (4) boxes that each write their share of random bytes (nothing for a
 * filesystem to share or compress) and are snapshotted (each snapshot a disk image of 20 GiB, sparse, holding
 * the data) and shut down. Then BENCH_ROUNDS (2) alternating rounds, medians, the server running:
 * `devboxd backup` to the data dir's filesystem (blobs and layers hard-linked) and to a tmpfs (/dev/shm: copied),
 * beside `cp -a` of the same directories (`<data>/layers`, `<data>/api`) to each, every one ended by `sync -f`.
 * The page cache holds the sources throughout (disk reads are not measured). Prints a markdown table.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEVBOXD_BIN, ROOT, runInBox, startTestServer } from '../test/helpers/server.js';

const TOTAL_MIB = Number(process.env.BENCH_SNAPSHOT_MIB ?? 1024);
const BOXES = Number(process.env.BENCH_BOXES ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const du = (dir: string) => Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
const allocated = (dir: string) => Number(execFileSync('du', ['-s', '-B1', dir], { encoding: 'utf8' }).split('\t')[0]);

const server = await startTestServer();
const near = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-bench-backup-'));
const far = fs.mkdtempSync('/dev/shm/devboxd-bench-backup-');
try {
  const api = server.client();
  await Promise.all(
    Array.from({ length: BOXES }, async () => {
      const box = await api.devboxes.createAndAwaitRunning({ launch_parameters: { resource_size_request: 'SMALL' } });
      const r = await runInBox(api, box.id, `head -c ${Math.round(TOTAL_MIB / BOXES)}M /dev/urandom > ~/data && sync`);
      if (r.code !== 0) throw new Error(r.err);
      await api.devboxes.snapshotDisk(box.id, {});
      await api.devboxes.shutdown(box.id);
    }),
  );
  const layers = path.join(server.dataDir, 'layers');
  const data = allocated(layers) + du(server.apiDir);
  const times: Record<string, number[]> = {};
  const timed = (what: string, fn: () => void) => {
    const t0 = performance.now();
    fn();
    (times[what] ??= []).push(performance.now() - t0);
  };
  const env = { ...process.env, DEVBOXD_DATA_DIR: server.dataDir, DEVBOXD_LOG_LEVEL: 'warn' };
  let summary = '';
  for (let round = 0; round < ROUNDS; round++) {
    for (const [where, dir] of [
      ['same filesystem', near],
      ['tmpfs', far],
    ] as const) {
      const dest = path.join(dir, `backup-${round}`);
      timed(`devboxd backup (${where}): the command`, () => {
        summary = execFileSync(process.execPath, [DEVBOXD_BIN, 'backup', dest], { cwd: ROOT, env, encoding: 'utf8' });
      });
      // The command's own work, without the start of the process (the manifest's `seconds`).
      (times[`devboxd backup (${where}): its work`] ??= []).push(JSON.parse(fs.readFileSync(path.join(dest, 'manifest.json'), 'utf8')).seconds * 1000);
      const copy = path.join(dir, `cp-${round}`);
      timed(`cp -a + sync (${where})`, () => {
        fs.mkdirSync(copy);
        execFileSync('cp', ['-a', layers, server.apiDir, copy]);
        execFileSync('sync', ['-f', copy]);
      });
      fs.rmSync(dest, { recursive: true });
      fs.rmSync(copy, { recursive: true });
    }
  }
  const mib = data / 2 ** 20;
  console.log(`data dir: ${mib.toFixed(0)} MiB allocated in ${BOXES} snapshots and the API's files; ${ROUNDS} rounds; load ${os.loadavg()[0]!.toFixed(1)}`);
  console.log(summary.split('\n').find((l) => l.startsWith('backup written')));
  console.log('| what | median ms | MiB/s |');
  console.log('| --- | --- | --- |');
  for (const [what, ms] of Object.entries(times)) console.log(`| ${what} | ${median(ms).toFixed(0)} | ${(mib / (median(ms) / 1000)).toFixed(0)} |`);
} finally {
  await server.stop();
  fs.rmSync(near, { recursive: true, force: true });
  fs.rmSync(far, { recursive: true, force: true });
}
