import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the tests find the repository and the programs they start. `npm test` runs them compiled (dist/test/,
 * scripts/build.mjs); run by hand through tsx they are the TypeScript files themselves. Both resolve to the
 * same repository and to the entry built beside them.
 */

/** Whether this module runs compiled (dist/) rather than as TypeScript through tsx. */
export const COMPILED = import.meta.url.endsWith('.js');

function repositoryRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
}

/** The repository's root (the nearest directory with a package.json: dist/ has none). */
export const ROOT = repositoryRoot();

/**
 * The devboxd entry to start: beside compiled tests the one-file build (dist/devboxd.js, scripts/build.mjs),
 * else the bin that loads TypeScript.
 */
export const DEVBOXD_BIN = COMPILED ? path.join(ROOT, 'dist/devboxd.js') : path.join(ROOT, 'bin/devboxd.js');

/**
 * Node's arguments for running the module `relative` to `from` (an `import.meta.url`), named by its
 * TypeScript name: its compiled file when the caller runs compiled, else the file itself through tsx.
 */
export function nodeScript(from: string, relative: string): string[] {
  const file = fileURLToPath(new URL(relative, from));
  return COMPILED ? [file.replace(/\.ts$/, '.js')] : ['--import', 'tsx', file];
}
