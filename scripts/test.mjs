// The test runner: builds dist/ once (scripts/build.mjs), runs the tiers on the compiled tests, prints where
// the time went (each tier's wall time, the ten slowest files) and fails a run over its time budget.
//
//   node scripts/test.mjs                 every tier, in order
//   node scripts/test.mjs fast store      the tiers named
//   node scripts/test.mjs test/api/ssh.test.ts test/fast/agents.test.ts
//                                         those files, each in a process of its own, one at a time
//
// TEST_BUDGET_SECONDS sets the budget (default 900 s for a run of every tier, none for a part of them).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { buildConsole } from './build-console.mjs';
import { buildDist, DIST, ROOT } from './build.mjs';

/**
 * The tiers, in the order a full run takes them.
 * - `together: n` runs the tier's files in n processes, each importing its share of the files (the
 *   application loads once per process, not once per file); files named in `own` run in processes of their
 *   own beside them.
 * - `apart: n` runs each file in a process of its own, n at once, the longest first.
 * Files named in `alone` run after the rest, one at a time with nothing beside them.
 */
export const TIERS = {
  // No root, no PostgreSQL, no sandbox: the app in-process (inject()) over SQLite and a stub runtime.
  fast: { dirs: ['test/fast'], together: 2 },
  // In-process too; some start namespaces, nftables or unpack as root. `own`: a file that measures its own
  // process (its CPU) runs in a process of its own beside the groups.
  unit: { dirs: ['test/unit'], together: 2, own: ['test/unit/box-services.test.js'] },
  // The store contract and the fast suites on PostgreSQL (a cluster the tests start; root). The rotation
  // beside a writer asserts the writer's p99 latency, which other processes' load would decide.
  store: { dirs: ['test/store'], together: 2, alone: ['test/store/rotation-stall.test.js'] },
  // Real sandboxes (root): the runtime driver alone, servers on PostgreSQL, the API through the SDK. They
  // wait on boxes, disks and the network much of the time: four at once (the in-process groups beside them)
  // kept two cores busy where three left a third of them idle.
  sandbox: {
    dirs: ['test/runtime', 'test/pg', 'test/api', 'test/browser'],
    apart: 4,
    // The bandwidth bound is measured as a rate, and the memory-pressure trigger reads the host's pressure:
    // these two measure the host, so they have it alone.
    alone: ['test/api/network-bounds.test.js', 'test/api/evictions-pressure.test.js'],
  },
};

const FULL_BUDGET_S = 900;
const TIMEOUT_MS = 600_000;

// Each file's seconds in the last run on this checkout, to order and balance the next one (a fresh clone
// goes by size: about 1 s per 4 KB of compiled test).
const TIMINGS = path.join(ROOT, 'node_modules/.cache/devboxd-test-seconds.json');
const known = (() => {
  try {
    return JSON.parse(fs.readFileSync(TIMINGS, 'utf8'));
  } catch {
    return {};
  }
})();
const sourceName = (file) => path.relative(DIST, file).replace(/\.js$/, '.ts');
const expected = (file) => known[sourceName(file)] ?? fs.statSync(file).size / 4096;
const longestFirst = (files) => [...files].sort((a, b) => expected(b) - expected(a));

function testFiles(dirs) {
  return dirs.flatMap((dir) =>
    fs
      .readdirSync(path.join(DIST, dir))
      .filter((f) => f.endsWith('.test.js'))
      .map((f) => path.join(DIST, dir, f)),
  );
}

/** Splits files into `n` groups of about equal expected time. */
function groups(files, n) {
  const out = Array.from({ length: n }, () => ({ files: [], seconds: 0 }));
  for (const f of longestFirst(files)) {
    const g = out.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    g.files.push(f);
    g.seconds += expected(f);
  }
  return out.filter((g) => g.files.length).map((g) => g.files.sort());
}

/**
 * A module that imports each file inside a suite named after it: the file's top-level hooks stay scoped to its
 * own tests, and the suite's duration is the file's time. Suites run one after another, but every file is
 * imported as the group starts, so work a file starts at import (not in a hook) overlaps the files before it.
 */
const GROUPS = path.join(DIST, '.groups');

function writeGroup(tier, i, files) {
  const file = path.join(GROUPS, `${tier}-${i + 1}.js`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const lines = files.map((f) => `describe(${JSON.stringify(path.relative(DIST, f))}, async () => { await import(${JSON.stringify(f)}); });`);
  fs.writeFileSync(file, `import { describe } from 'node:test';\n${lines.join('\n')}\n`);
  return file;
}

/**
 * Runs `files` (test files and group modules) as processes, `concurrency` at once, reporting to stdout;
 * resolves with the failures and each test file's seconds (its process's, or in a group its suite's).
 */
async function runFiles(files, concurrency) {
  const fileSeconds = new Map();
  let failed = 0;
  const stream = run({ files, concurrency, timeout: TIMEOUT_MS });
  stream.on('data', (event) => {
    const d = event.data;
    if (event.type === 'test:fail' && d.details?.type !== 'suite') failed++;
    if (event.type !== 'test:complete' || d.nesting !== 0) return;
    // A process is reported under its module's path; a file in a group as a suite named by its relative path.
    const key = files.includes(d.name) ? !d.name.startsWith(GROUPS) && path.relative(DIST, d.name) : d.name.endsWith('.test.js') && d.name;
    if (key) fileSeconds.set(key.replace(/\.js$/, '.ts'), (d.details?.duration_ms ?? 0) / 1000);
  });
  await new Promise((resolve, reject) => {
    stream.compose(new spec()).on('error', reject).on('end', resolve).pipe(process.stdout, { end: false });
  });
  return { failed, fileSeconds };
}

/**
 * The processes a run of `tiers` starts: `pool` runs `concurrency` at once, the in-process tiers' processes
 * first (they need no base image, which `prebuildImage` builds meanwhile on a fresh machine), then the
 * sandbox files; each part longest expected first, so the short ones fill in around the long ones. `alone`
 * runs one at a time after the pool.
 */
function plan(tiers) {
  const pool = [];
  const alone = [];
  let concurrency = 1;
  for (const name of tiers) {
    const t = TIERS[name];
    const all = testFiles(t.dirs);
    const named = (list) => all.filter((f) => list?.includes(path.relative(DIST, f)));
    const mine = named(t.alone);
    alone.push(...mine);
    const rest = all.filter((f) => !mine.includes(f));
    if (t.together) {
      const own = named(t.own);
      pool.push(...own.map((f) => ({ file: f, seconds: expected(f) })));
      const shares = groups(
        rest.filter((f) => !own.includes(f)),
        t.together,
      );
      pool.push(...shares.map((g, i) => ({ file: writeGroup(name, i, g), seconds: g.reduce((n, f) => n + expected(f), 0) })));
      concurrency = Math.max(concurrency, t.together);
    } else {
      pool.push(...rest.map((f) => ({ file: f, seconds: expected(f), sandbox: true })));
      concurrency = Math.max(concurrency, t.apart);
    }
  }
  const order = (a, b) => Number(Boolean(a.sandbox)) - Number(Boolean(b.sandbox)) || b.seconds - a.seconds;
  return { pool: pool.sort(order).map((j) => j.file), alone, concurrency };
}

function parseArgs(argv) {
  const tiers = [];
  const files = [];
  for (const a of argv) {
    if (TIERS[a]) tiers.push(a);
    else if (a.endsWith('.ts') && fs.existsSync(path.join(ROOT, a))) files.push(a);
    else {
      process.stderr.write(`test: "${a}" is neither a tier (${Object.keys(TIERS).join(', ')}) nor a test file\n`);
      process.exit(2);
    }
  }
  return { tiers: tiers.length || files.length ? tiers : Object.keys(TIERS), files };
}

/**
 * On a machine without the base image (a fresh CI machine: about 90 s of mmdebstrap), builds it from the first
 * second of a run that has sandbox files, beside the in-process tiers, instead of inside the first sandbox
 * test while the others wait on its lock. Resolves when done (a failure is left to the tests to report).
 */
function prebuildImage() {
  if (process.getuid?.() !== 0) return Promise.resolve();
  const image = pathToFileURL(path.join(DIST, 'src/runtime/linux/image.js')).href;
  const imageDir = path.join(ROOT, 'data/images');
  const script = `import { BaseImage } from ${JSON.stringify(image)};
const quiet = { info() {}, warn() {}, error() {} };
const t = Date.now();
const image = new BaseImage(${JSON.stringify(imageDir)}, quiet);
if (!(await import('node:fs')).existsSync(image.root)) { await image.ensure(); console.log('test: base image built in ' + Math.round((Date.now() - t) / 1000) + ' s'); }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise((resolve) => child.once('exit', resolve));
}

const started = Date.now();
const { tiers, files } = parseArgs(process.argv.slice(2));
const whole = tiers.length === Object.keys(TIERS).length && !files.length;
// The console's build (skipped when current): the browser tests and every server's `/` serve it.
await Promise.all([buildDist(), buildConsole()]);
const results = [];
const image = tiers.includes('sandbox') ? prebuildImage() : Promise.resolve();
if (tiers.length) {
  const { pool, alone, concurrency } = plan(tiers);
  results.push(await runFiles(pool, concurrency));
  if (alone.length) results.push(await runFiles(alone, 1));
}
if (files.length)
  results.push(
    await runFiles(
      files.map((f) => path.join(DIST, f.replace(/\.ts$/, '.js'))),
      1,
    ),
  );

await image;
const seconds = results.flatMap((r) => [...r.fileSeconds]);
fs.mkdirSync(path.dirname(TIMINGS), { recursive: true });
fs.writeFileSync(TIMINGS, JSON.stringify({ ...known, ...Object.fromEntries(seconds) }));

// Where the time went, so the next slow test shows in the log of the run that adds it.
const total = (Date.now() - started) / 1000;
// Tiers share the pool, so each tier's figure is the sum of its files' seconds; the total is the wall time.
const out = ['', '== time'];
for (const name of tiers) {
  const mine = seconds.filter(([f]) => TIERS[name].dirs.some((d) => f.startsWith(`${d}/`)));
  const sum = mine.reduce((n, [, s]) => n + s, 0);
  out.push(`  tier ${name.padEnd(8)} ${sum.toFixed(1).padStart(7)} s  in ${mine.length} files`);
}
out.push(`  total         ${total.toFixed(1).padStart(7)} s  wall, the build included`, '== slowest files');
for (const [f, s] of seconds.sort((a, b) => b[1] - a[1]).slice(0, 10)) out.push(`  ${s.toFixed(1).padStart(7)} s  ${f}`);
const failed = results.reduce((n, r) => n + r.failed, 0);
const budget = Number(process.env.TEST_BUDGET_SECONDS) || (whole ? FULL_BUDGET_S : 0);
const over = budget > 0 && total > budget;
if (over) out.push(`== over budget: the run took ${total.toFixed(0)} s, its budget is ${budget} s (README: Tests)`);
if (failed) out.push(`== ${failed} test(s) failed`);
process.stdout.write(`${out.join('\n')}\n`);
process.exit(failed || over ? 1 : 0);
