import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout devboxd runs from: the nearest directory above this module that holds a package.json. The same
 * code runs as TypeScript (src/), compiled file by file (dist/src/) and bundled into one file (dist/), each at
 * another depth, so paths to the checkout's other parts (its native helpers) start here rather than at a
 * fixed number of `..` from the module asking.
 */
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`devboxd: no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

export const INSTALL_ROOT = findRoot();

/** The checkout's native/ directory: C helpers under build/, the image recipe beside them. */
export const NATIVE_DIR = path.join(INSTALL_ROOT, 'native');

/** A native helper built by `make -C native` (scripts/setup.sh). */
export function nativeHelper(name: string): string {
  return path.join(NATIVE_DIR, 'build', name);
}
