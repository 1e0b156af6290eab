/** Where the Linux driver keeps things: native helpers in the repo, box and layer state in the data dir. */
import { join } from 'node:path';
import { NATIVE_DIR as nativeDir } from '../../lib/install-root.js';

export const native = {
  dir: nativeDir,
  boxinit: join(nativeDir, 'build', 'boxinit'),
  boxexec: join(nativeDir, 'build', 'boxexec'),
  boxexecd: join(nativeDir, 'build', 'boxexecd'),
  boxdisk: join(nativeDir, 'build', 'boxdisk'),
  boxlinkd: join(nativeDir, 'build', 'boxlinkd'),
  nftsetd: join(nativeDir, 'build', 'nftsetd'),
  ociunpack: join(nativeDir, 'build', 'ociunpack'),
  layertar: join(nativeDir, 'build', 'layertar'),
  mkimage: join(nativeDir, 'mkimage.sh'),
};

/** Host uid/gid that box id 0 maps to (native/common.h BOX_ID_BASE). */
export const BOX_ID_BASE = 1_000_000;

export class DataPaths {
  constructor(readonly dataDir: string) {}

  get boxes(): string {
    return join(this.dataDir, 'boxes');
  }

  /** Sockets of this server's helpers (root-only). */
  get run(): string {
    return join(this.dataDir, 'run');
  }

  get layers(): string {
    return join(this.dataDir, 'layers');
  }

  /** Formatted disk templates, one per size. */
  get disks(): string {
    return join(this.dataDir, 'disks');
  }

  /** Box disks, mounted (diskpool.ts). */
  get pool(): string {
    return join(this.dataDir, 'disks', 'pool');
  }

  box(id: string): string {
    return join(this.boxes, id);
  }

  /** A symlink to the box's disk (a pool slot); the writable layer is `upper` in there. */
  boxDisk(id: string): string {
    return join(this.boxes, id, 'disk');
  }

  /** A layer that was a suspended box's disk: its image, and where it is mounted read-only. */
  layerImage(id: string): string {
    return join(this.layers, `${id}.img`);
  }

  layerMount(id: string): string {
    return join(this.layers, '.mnt', id);
  }

  layer(id: string): string {
    return join(this.layers, id);
  }
}

/** Box and layer ids name directories and cgroups: keep them to a safe alphabet. */
export function isSafeId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(id);
}

/**
 * The sandboxes the box directories `names` stand for, each once: a box by its own id, a sidecar
 * (`<box>--<name>`) by its box's, since it goes with that box. So a sidecar whose box directory is already
 * gone (the server died between the box's teardown and its sidecars') is still found, and removed with it.
 */
export function sandboxesOf(names: string[]): string[] {
  return [...new Set(names.filter(isSafeId).map((n) => n.split('--')[0]!))];
}
