/** Where the Linux driver keeps things: native helpers in the repo, box and layer state in the data dir. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const nativeDir = fileURLToPath(new URL('../../../native/', import.meta.url));

export const native = {
  dir: nativeDir,
  boxinit: join(nativeDir, 'build', 'boxinit'),
  boxexec: join(nativeDir, 'build', 'boxexec'),
  boxexecd: join(nativeDir, 'build', 'boxexecd'),
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

  box(id: string): string {
    return join(this.boxes, id);
  }

  layer(id: string): string {
    return join(this.layers, id);
  }
}

/** Box and layer ids name directories and cgroups: keep them to a safe alphabet. */
export function isSafeId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(id);
}
