// What an idle box costs the host (docs/operating.md, "Sizing"): N boxes of the default size created and left
// idle, then what their memory cgroups hold, how much the kernel's slab grew, what the data dir grew by on disk
// and what devboxd's processes grew by. Host-wide figures (slab) move with whatever else the host runs: read
// them over several runs. Drops the page cache before each reading (root; the host's other readers refill it).
// Run: node --import tsx bench/idle-box.ts   (BENCH_N=50; in a network namespace of its own as the tests are:
// unshare -n sh -c 'ip link set lo up; node --import tsx bench/idle-box.ts')
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { startTestServer } from '../test/helpers/server.js';

const N = Number(process.env.BENCH_N ?? 50);

const meminfo = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
const diskBytes = (dir: string) => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) * 1024;
const settle = async () => {
  await new Promise((r) => setTimeout(r, 3000));
  execFileSync('sh', ['-c', 'sync; echo 1 > /proc/sys/vm/drop_caches']);
};
/** What a box's memory cgroup holds: v1's usage or v2's current, whichever the host mounts. */
function cgroupBytes(id: string): number {
  for (const file of [`/sys/fs/cgroup/memory/devboxd/${id}/memory.usage_in_bytes`, `/sys/fs/cgroup/devboxd/${id}/memory.current`]) {
    if (fs.existsSync(file)) return Number(fs.readFileSync(file, 'utf8'));
  }
  throw new Error(`no memory cgroup for ${id}`);
}

const server = await startTestServer({ DEVBOXD_WARM_POOL: '0', DEVBOXD_LOG_LEVEL: 'warn' });
try {
  const api = server.client();
  // One box first, so the disk templates and the image's mounts exist before the readings.
  const first = await api.devboxes.createAndAwaitRunning({});
  await settle();
  const before = { slab: meminfo('Slab'), disk: diskBytes(server.dataDir), rss: server.rssBytes() };
  const ids: string[] = [];
  for (let i = 0; i < N; i++) ids.push((await api.devboxes.createAndAwaitRunning({})).id);
  await settle();
  const after = { slab: meminfo('Slab'), disk: diskBytes(server.dataDir), rss: server.rssBytes() };
  const cgroups = ids.reduce((n, id) => n + cgroupBytes(id), 0);
  const kib = (bytes: number) => `${(bytes / N / 1024).toFixed(0)} KiB`;
  console.log(`| ${N} idle boxes | per box |`);
  console.log('| --- | --- |');
  console.log(`| memory cgroup (init, forker, their page cache) | ${kib(cgroups)} |`);
  console.log(`| kernel slab growth (host-wide) | ${kib(after.slab - before.slab)} |`);
  console.log(`| data dir growth on disk | ${kib(after.disk - before.disk)} |`);
  console.log(`| devboxd's processes (API server, node agent) | ${kib(after.rss - before.rss)} |`);
  for (const id of [first.id, ...ids]) await api.devboxes.shutdown(id);
} finally {
  await server.stop();
}
