/**
 * The copying passes of a backup, each recording what it put where in one `Collected`. Blobs and layers are
 * taken twice: once before the database is copied and once after, the second time only what appeared
 * meanwhile. Every record names its file before the file goes (a delete removes the row, then the file) and
 * only after the file is whole (a put or a snapshot writes the file, then the row), so whatever the database
 * copy names was there during the first pass or was made before the copy, and the second pass finds it: only a
 * file both made and deleted while the backup ran can be missing, and the second pass lists those.
 */
import fs from 'node:fs';
import path from 'node:path';
import { eachLimited, filesUnder, placeFile, placeTree } from './copy.js';
import { chunkDigest, sha256File, treeDigest } from './digest.js';
import { LAYERS, layerNames } from './layout.js';
import type { Entry } from './manifest.js';

/**
 * The checksum of what was placed at `dst`, read from `src` while it is there: the same bytes (the source is
 * never rewritten) on the data dir's filesystem, whose extent map spares reading a disk image's holes where
 * the backup's filesystem may have none (tmpfs), and which a backup to a slow disk need not read back.
 */
async function sumOf<T>(src: string, dst: string, fn: (file: string) => Promise<T>): Promise<T> {
  try {
    return await fn(src);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return fn(dst);
  }
}

export class Collected {
  readonly entries: Entry[] = [];
  readonly vanished: string[] = [];
  readonly layers = new Set<string>();
  private readonly taken = new Set<string>();
  linked = 0;

  constructor(readonly root: string) {}

  has(rel: string): boolean {
    return this.taken.has(rel);
  }

  add(e: Entry, linked: boolean): void {
    this.taken.add(e.path);
    this.entries.push(e);
    if (linked) this.linked++;
  }

  bytes(prefix = ''): number {
    return this.entries.filter((e) => e.path.startsWith(prefix)).reduce((n, e) => n + e.bytes, 0);
  }
}

/**
 * Takes the layers of `nodeDir` not taken yet into `layers/`: a disk image as a file (linked or copied with
 * its holes), a directory as a tree. `late`: a layer gone before it was taken is listed as vanished.
 */
export async function takeLayers(out: Collected, nodeDir: string, linkOk: boolean, late: boolean): Promise<void> {
  const names = layerNames(nodeDir).filter((n) => !out.has(`${LAYERS}/${n}`));
  await eachLimited(names, async (name) => {
    const src = path.join(nodeDir, LAYERS, name);
    const rel = `${LAYERS}/${name}`;
    const dst = path.join(out.root, rel);
    const st = fs.lstatSync(src, { throwIfNoEntry: false });
    let kept: boolean;
    if (st?.isFile()) {
      kept = await placeFile(src, dst, linkOk);
      if (kept) out.add({ path: rel, kind: 'image', bytes: st.blocks * 512, digest: 'sha256-chunks', sum: await sumOf(src, dst, chunkDigest) }, linkOk);
    } else if (st?.isDirectory()) {
      kept = await placeTree(src, dst, linkOk);
      if (kept) {
        const t = await sumOf(src, dst, treeDigest);
        out.add({ path: rel, kind: 'tree', bytes: t.bytes, entries: t.entries, digest: 'sha256-tree', sum: t.digest }, linkOk);
      }
    } else kept = false;
    if (kept) out.layers.add(name.replace(/\.img$/, ''));
    else if (late) out.vanished.push(rel);
  });
}

/**
 * Takes the files under `srcDir` not taken yet into `rel` (skipping the top-level names in `skip`), linked
 * when `linkOk` (only files never rewritten: `immutable`). `late`: a file gone before it was taken is listed
 * as vanished.
 */
export async function takeFiles(
  out: Collected,
  srcDir: string,
  rel: string,
  opts: { linkOk: boolean; immutable: boolean; late: boolean; skip?: string[] },
): Promise<void> {
  const files = filesUnder(srcDir, opts.skip).filter((f) => !out.has(`${rel}/${f}`));
  await eachLimited(files, async (f) => {
    const src = path.join(srcDir, f);
    const dst = path.join(out.root, rel, f);
    if (await placeFile(src, dst, opts.linkOk)) {
      // Output being written grows after the copy: its checksum is the copy's.
      const sum = opts.immutable ? await sumOf(src, dst, sha256File) : await sha256File(dst);
      out.add({ path: `${rel}/${f}`, kind: 'file', bytes: fs.statSync(dst).size, digest: 'sha256', sum }, opts.linkOk);
    } else if (opts.late) out.vanished.push(`${rel}/${f}`);
  });
}
