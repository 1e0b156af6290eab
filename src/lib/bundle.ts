import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Esbuild from 'esbuild';

/**
 * A module and everything it imports as one CommonJS script (esbuild), for a process that reads nothing of
 * the checkout (its runtime directory holds the script, see runtime-dir.ts). esbuild takes 0.1–0.6 s, so the
 * script is kept in node_modules/.cache with the content hash of every file it was made from: a later start,
 * a test server's included, hashes those files (tens of KB) and takes the kept script when none changed.
 */

const OPTIONS = { bundle: true, format: 'cjs', platform: 'node', target: 'node20', logLevel: 'silent' } as const;
const requireHere = createRequire(import.meta.url);
const ESBUILD = path.dirname(requireHere.resolve('esbuild/package.json'));
/** The checkout (node_modules' parent): the kept scripts name their files relative to it, so a checkout reached
 * by another path (moved, or bind-mounted as a test does) finds them current. */
const CHECKOUT = path.resolve(ESBUILD, '../..');
/** Beside the other tools' caches (node_modules/.cache), so `npm ci` clears it with the modules it was made from. */
const CACHE = path.join(CHECKOUT, 'node_modules/.cache/devboxd-bundles');

interface Kept {
  /** Every input file (relative to the checkout) and the SHA-256 of its content when the script was made. */
  inputs: Record<string, string>;
  /** The script's own SHA-256: a cut-short or altered script is made again. */
  output: string;
}

export const sha256 = (b: Buffer | string): string => crypto.createHash('sha256').update(b).digest('hex');

const built = new Map<string, Buffer>();

/** The bundled script of `entry` (a .ts or .js file); made at most once per process and per change of its inputs. */
export function bundle(entry: string): Buffer {
  // esbuild's version from its package.json: esbuild itself is loaded only to build.
  const { version } = JSON.parse(fs.readFileSync(path.join(ESBUILD, 'package.json'), 'utf8')) as { version: string };
  const key = sha256(JSON.stringify({ entry: path.relative(CHECKOUT, entry), version, OPTIONS })).slice(0, 24);
  let script = built.get(key);
  if (script) return script;
  const base = path.join(CACHE, key);
  script = readKept(base) ?? make(entry, base);
  built.set(key, script);
  return script;
}

function readKept(base: string): Buffer | undefined {
  try {
    const kept = JSON.parse(fs.readFileSync(`${base}.json`, 'utf8')) as Kept;
    for (const [file, hash] of Object.entries(kept.inputs)) if (sha256(fs.readFileSync(path.resolve(CHECKOUT, file))) !== hash) return undefined;
    const script = fs.readFileSync(`${base}.cjs`);
    return sha256(script) === kept.output ? script : undefined;
  } catch {
    return undefined;
  }
}

function make(entry: string, base: string): Buffer {
  const { buildSync } = requireHere('esbuild') as typeof Esbuild;
  // Paths in the script's comments and the metafile are relative to the checkout: none of the host's.
  const result = buildSync({ ...OPTIONS, entryPoints: [entry], write: false, metafile: true, absWorkingDir: CHECKOUT });
  const script = Buffer.from(result.outputFiles[0]!.contents);
  // Hashed after the build: a file changed during it makes the kept script stale, never wrongly current.
  const inputs: Record<string, string> = {};
  for (const file of Object.keys(result.metafile.inputs)) inputs[file] = sha256(fs.readFileSync(path.resolve(CHECKOUT, file)));
  try {
    fs.mkdirSync(path.dirname(base), { recursive: true });
    const tmp = `${base}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, script);
    fs.renameSync(tmp, `${base}.cjs`);
    fs.writeFileSync(tmp, JSON.stringify({ inputs, output: sha256(script) } satisfies Kept));
    fs.renameSync(tmp, `${base}.json`);
  } catch {
    // A read-only checkout: the script is made again at each start.
  }
  return script;
}
