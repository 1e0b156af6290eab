// Builds the web console (console/) with Vite into console/dist/, which the API server serves at `/`.
// npm start and npm test run it; it skips the build when console/dist is newer than every source of it
// (console/ and package-lock.json), so a start after the first costs a directory walk, not a build.
// `--force` builds anyway.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CONSOLE = path.join(ROOT, 'console');
const OUT = path.join(CONSOLE, 'dist');

/** The newest modification time among the console's sources. */
function newestSource() {
  let newest = fs.statSync(path.join(ROOT, 'package-lock.json')).mtimeMs;
  for (const e of fs.readdirSync(CONSOLE, { recursive: true, withFileTypes: true })) {
    const full = path.join(e.parentPath ?? e.path, e.name);
    if (full.startsWith(OUT + path.sep) || !e.isFile()) continue;
    newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

export async function buildConsole({ force = false } = {}) {
  const built = path.join(OUT, 'index.html');
  if (!force && fs.existsSync(built) && fs.statSync(built).mtimeMs >= newestSource()) return false;
  const { build } = await import('vite');
  await build({ configFile: path.join(CONSOLE, 'vite.config.ts'), logLevel: 'warn' });
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const t0 = performance.now();
  const made = await buildConsole({ force: process.argv.includes('--force') });
  if (made) console.error(`console: built into console/dist in ${Math.round(performance.now() - t0)} ms`);
}
