/**
 * Layers between nodes: `node --import tsx bench/layers.ts` (root). A directory layer of about 1 GiB — the
 * base image's /usr (code, libraries, Python: some 12 700 files) and BENCH_RANDOM_MIB (default 547) of random
 * bytes in 8 MiB files (what a box writes that does not compress) — is moved from one driver's data dir to
 * another's: `exportLayer` streamed into `importLayer` (archive, zstd, confined unpack, whiteout and mark
 * checks, syncfs), and each half alone (export into a file, import of the archive from that file). Baselines
 * in the same run, on the same filesystem, into a fresh directory, each ended by `sync -f`: `cp -a`, `tar -c |
 * tar -x` (root, numeric owners, xattrs) and the same through `zstd -1 -T0 | zstd -d`. BENCH_ROUNDS (default 2)
 * alternating rounds, medians. The page cache holds the source throughout (read speed is not measured).
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { LinuxDriver } from '../src/runtime/linux/driver.js';
import { ROOT } from '../test/helpers/server.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RANDOM_MIB = Number(process.env.BENCH_RANDOM_MIB ?? 547);
const quiet = { info() {}, warn() {}, error() {} };
const work = mkdtempSync(join(tmpdir(), 'devboxd-bench-layers-'));
const image = join(ROOT, 'data/images', readdirSync(join(ROOT, 'data/images')).find((n) => n.startsWith('bookworm-'))!);

const sh = (cmd: string) => execFileSync('bash', ['-c', cmd], { stdio: ['ignore', 'pipe', 'inherit'] }).toString();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const drivers = ['a', 'b'].map((n) => new LinuxDriver({ dataDir: join(work, n), imageDir: join(ROOT, 'data/images'), logger: quiet }));
try {
  await Promise.all(drivers.map((d) => d.prepare()));
  const [a, b] = drivers as [LinuxDriver, LinuxDriver];
  const src = join(work, 'a', 'layers', 'lyr_bench');
  mkdirSync(src);
  sh(`cp -a ${image}/usr ${src}/usr && mkdir ${src}/data`);
  for (let i = 0; i < Math.ceil(RANDOM_MIB / 8); i++) sh(`head -c 8M /dev/urandom > ${src}/data/r${i}`);
  sh(`chown -R 1001000:1001000 ${src}/data && sync`);
  const bytes = Number(sh(`du -sb ${src}`).split('\t')[0]);
  const files = Number(sh(`find ${src} | wc -l`));
  const archive = join(work, 'archive');

  const times: Record<string, number[]> = {};
  const record = (what: string, ms: number) => (times[what] ??= []).push(ms);
  const dst = (name: string) => join(work, 'b', 'layers', name);
  let archiveBytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const id = `lyr_r${round}`;
    record('exportLayer → importLayer (streamed)', await timed(async () => b.importLayer(id, await a.exportLayer('lyr_bench'))));
    record(
      'exportLayer alone (into a file)',
      await timed(async () => {
        await pipeline(await a.exportLayer('lyr_bench'), createWriteStream(archive));
      }),
    );
    archiveBytes = statSync(archive).size;
    record('importLayer alone (archive read from a file)', await timed(() => b.importLayer(`${id}x`, createReadStream(archive))));
    record('cp -a + sync', await timed(() => sh(`cp -a ${src} ${dst(`cp${round}`)} && sync -f ${dst(`cp${round}`)}`)));
    const tar = 'tar -c -f - -C SRC --numeric-owner --xattrs --xattrs-include="*" --sparse .';
    const untar = 'tar -x -f - -C DST --numeric-owner --same-owner --same-permissions --xattrs --xattrs-include="*"';
    const d1 = dst(`tar${round}`);
    record('tar | tar + sync', await timed(() => sh(`mkdir ${d1} && ${tar.replace('SRC', src)} | ${untar.replace('DST', d1)} && sync -f ${d1}`)));
    const d2 = dst(`tarz${round}`);
    record(
      'tar | zstd -1 -T0 | zstd -d | tar + sync',
      await timed(() => sh(`mkdir ${d2} && ${tar.replace('SRC', src)} | zstd -1 -T0 -q -c | zstd -d -q -c | ${untar.replace('DST', d2)} && sync -f ${d2}`)),
    );
    for (const n of readdirSync(join(work, 'b', 'layers')).filter((n) => !n.startsWith('.'))) await b.deleteLayer(n);
  }
  const mib = bytes / 2 ** 20;
  console.log(
    `layer: ${mib.toFixed(0)} MiB in ${files} entries; archive ${(archiveBytes / 2 ** 20).toFixed(0)} MiB (zstd -1); ${ROUNDS} rounds; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log('| what | median ms | MiB/s of the layer |');
  console.log('| --- | --- | --- |');
  for (const [what, ms] of Object.entries(times)) console.log(`| ${what} | ${median(ms).toFixed(0)} | ${(mib / (median(ms) / 1000)).toFixed(0)} |`);
} finally {
  for (const d of drivers) await d.close().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
}
