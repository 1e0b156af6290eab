// Compiles src/, test/ and bench/ to JavaScript under dist/ with esbuild (one pass, ~2 s): the tests run on
// the output, so no test process or test server loads TypeScript through a loader (about 1 s of CPU each).
// esbuild only strips types; `npm run typecheck` (tsc) checks them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = path.join(ROOT, 'dist');
const TREES = ['src', 'test', 'bench'];

/** Files below `dir` (relative to ROOT), recursively. */
function filesOf(dir) {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath ?? e.path, e.name)));
}

export async function buildDist() {
  // A fresh tree each time: a source file deleted or renamed leaves no stale module behind.
  fs.rmSync(DIST, { recursive: true, force: true });
  const files = TREES.flatMap(filesOf);
  const bundled = bundleServer();
  await build({
    entryPoints: files.filter((f) => f.endsWith('.ts')),
    outdir: DIST,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Stack traces of a failing test name the TypeScript line (node --enable-source-maps).
    sourcemap: 'inline',
    sourcesContent: false,
    logLevel: 'warning',
  });
  // Other files the tests read beside their modules (fixtures, shell probes).
  for (const f of files.filter((f) => !f.endsWith('.ts'))) {
    fs.mkdirSync(path.dirname(path.join(DIST, f)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, f), path.join(DIST, f));
  }
  await bundled;
}

/**
 * The devboxd command as one file, `dist/devboxd.js`, with its dependencies inside: what the tests start as a
 * server or run as the CLI. Loading the same program as some two thousand ES modules (ours and
 * node_modules') cost about 1.2 s of CPU per process, most of it resolving and linking them; one file starts
 * in half the time. Left outside: packages with native addons or binaries they find by path. The axon SQL
 * process's entry goes beside it (src/resources/axons/sql-runtime.ts looks for it next to its own module).
 */
async function bundleServer() {
  const common = { absWorkingDir: ROOT, outdir: DIST, format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' };
  await Promise.all([
    build({
      ...common,
      entryPoints: { devboxd: 'src/bin.ts' },
      bundle: true,
      // Chunks at each dynamic import: the root supervisor and the node agent load the part they run (the
      // runtime, not the API's routes, store and libraries), which cut their start by most of a second each.
      splitting: true,
      chunkNames: 'chunk-[hash]',
      external: ['better-sqlite3', 'esbuild', '@ast-grep/cli', 'ssh2', 'cpu-features', '@fastify/swagger-ui'],
      // CommonJS dependencies inside an ES module still call require() for Node's own modules.
      banner: { js: "import { createRequire as __devboxdRequire } from 'node:module'; const require = __devboxdRequire(import.meta.url);" },
      // Beside, not inline: Node reads a map only with --enable-source-maps (NODE_OPTIONS), when a trace is wanted.
      sourcemap: 'linked',
      sourcesContent: false,
    }),
    // Its own bundle of itself and better-sqlite3 is made at run time (sql-runtime.ts, kept in node_modules/.cache): here only compiled.
    build({ ...common, entryPoints: { 'sql-child': 'src/resources/axons/sql-child.ts' } }),
  ]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const t0 = Date.now();
  await buildDist();
  process.stdout.write(`build: dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
}
