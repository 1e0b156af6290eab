// The web console (issue 28): the first page (the devbox list) interactive in Chromium with 1000 devboxes in
// the account, against the same page with an empty account, on one server in the same run, taking turns;
// and the size of what the first page loads (raw and gzip), read off console/dist.
// "Interactive": from navigation start until the list's first row (or the empty state) is drawn and the
// page's own script has run, measured by the page's clock (performance.now()).
// Run: node --import tsx bench/console.ts   (BENCH_BOXES=1000, BENCH_ROUNDS=10)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { launchChromium } from '../test/helpers/browser.js';
import { ADMIN_KEY, DEVBOXD_BIN, ROOT, startTestServer } from '../test/helpers/server.js';
import { percentile } from './lib/load.js';

const BOXES = Number(process.env.BENCH_BOXES ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CONCURRENCY = 8;

const s = await startTestServer({ DEVBOXD_LOG_LEVEL: 'warn', DEVBOXD_WARM_POOL: '4' });
const emptyKey = execFileSync(process.execPath, [DEVBOXD_BIN, 'accounts', 'create', 'bench-empty'], {
  cwd: ROOT,
  env: { ...process.env, DEVBOXD_DATA_DIR: s.dataDir, DEVBOXD_LOG_LEVEL: 'silent' },
})
  .toString()
  .trim()
  .split('\n')
  .at(-1)!;
const browser = await launchChromium();
try {
  // The full account: real boxes, made through the API; all but the last 20 shut down again (their records
  // stay listed, as a long-lived account's do), so the host is not holding a thousand sandboxes.
  const api = s.client();
  const t0 = performance.now();
  let made = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (made < BOXES) {
        const n = made++;
        const d = await api.devboxes.create({ name: `bench-${n}` });
        if (n < BOXES - 20) await api.devboxes.shutdown(d.id);
      }
    }),
  );
  console.error(`made ${BOXES} devboxes in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  const sides = [
    { name: `${BOXES} devboxes`, key: ADMIN_KEY, times: [] as number[] },
    { name: 'empty account', key: emptyKey, times: [] as number[] },
  ];
  const firstPage = async (key: string) => {
    // A new context per load: no cache, as a first visit; the key is in session storage as after sign-in.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await ctx.addInitScript((k) => sessionStorage.setItem('devboxd.apiKey', k), key);
    const page = await ctx.newPage();
    await page.goto(`${s.url}/devboxes`);
    await page.locator('main table tbody tr, main .empty').first().waitFor();
    const ms = await page.evaluate(() => performance.now());
    await ctx.close();
    return ms;
  };
  for (const side of sides) await firstPage(side.key); // warm-up: the server's first answers
  for (let r = 0; r < ROUNDS; r++) for (const side of r % 2 ? [...sides].reverse() : sides) side.times.push(await firstPage(side.key));

  const assets = path.join(ROOT, 'console/dist/assets');
  const html = fs.readFileSync(path.join(ROOT, 'console/dist/index.html'), 'utf8');
  const entry = [...html.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]!);
  const listChunk = fs.readdirSync(assets).filter((f) => /^list-.*\.js$/.test(f) && fs.readFileSync(path.join(assets, f), 'utf8').includes('Filter devboxes'));
  const all = fs.readdirSync(assets);
  const size = (files: string[]) => {
    const bufs = files.map((f) => fs.readFileSync(path.join(assets, f)));
    const raw = bufs.reduce((a, b) => a + b.length, 0);
    const gz = bufs.reduce((a, b) => a + zlib.gzipSync(b, { level: 9 }).length, 0);
    return `${(raw / 1024).toFixed(1)} KiB (${(gz / 1024).toFixed(1)} KiB gzip)`;
  };
  console.log(`\n| first page, ${ROUNDS} loads each | p50 ms | p90 ms | max ms |\n|---|---|---|---|`);
  for (const side of sides) {
    const t = [...side.times].sort((a, b) => a - b);
    console.log(`| ${side.name} | ${percentile(t, 50).toFixed(0)} | ${percentile(t, 90).toFixed(0)} | ${t.at(-1)!.toFixed(0)} |`);
  }
  console.log(`\n| bundle | size |\n|---|---|`);
  console.log(`| first page: index.html's script and styles (${entry.join(', ')}) | ${size(entry)} |`);
  console.log(`| first page: the devbox list's chunk | ${size(listChunk)} |`);
  console.log(`| everything built (${all.length} files, every page, terminal and charts) | ${size(all)} |`);
} finally {
  await browser.close();
  await s.stop();
}
