/**
 * Moving a layer between nodes (RuntimeDriver.exportLayer / importLayer; the stream is layer-archive.ts).
 * An imported layer is a directory layer (`layers/<id>`) whatever it was where it was made: a disk layer
 * (`<id>.img`) arrives as the files of its writable layer. It appears only whole: unpacked under `.tmp-…`
 * (which a restart removes), then renamed. An export mounts its tar's root on an empty directory of
 * `.stage/` (which a restart empties).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { SandboxError } from '../driver.js';
import { fsyncDir } from './fsutil.js';
import { type ImportLimits, packLayer, unpackLayer } from './layer-archive.js';
import { isSafeId, type DataPaths } from './paths.js';

export class LayerTransfer {
  constructor(
    private readonly paths: DataPaths,
    private readonly limits: ImportLimits,
    private readonly exists: (layerId: string) => Promise<boolean>,
    /** The directory a layer contributes to an overlay (a disk layer's mounted writable layer). */
    private readonly dirOf: (layerId: string) => Promise<string>,
  ) {}

  async export(layerId: string): Promise<Readable> {
    if (!isSafeId(layerId) || !(await this.exists(layerId))) throw new SandboxError('not_found', `layer ${layerId} does not exist`);
    // Where the confined tar's root is mounted while it reads (an empty directory here).
    mkdirSync(join(this.paths.layers, '.stage'), { recursive: true, mode: 0o700 });
    const stage = join(this.paths.layers, '.stage', `${layerId}-${randomBytes(4).toString('hex')}`);
    return packLayer(await this.dirOf(layerId), stage);
  }

  /** A layer that exists already is kept (a layer never changes): the body is dropped unread. */
  async import(layerId: string, body: Readable): Promise<void> {
    if (!isSafeId(layerId)) {
      body.destroy();
      throw new SandboxError('failed', `invalid layer id ${JSON.stringify(layerId)}`);
    }
    if (await this.exists(layerId)) {
      body.destroy();
      return;
    }
    mkdirSync(this.paths.layers, { recursive: true, mode: 0o700 });
    const tmp = join(this.paths.layers, `.tmp-${layerId}-${randomBytes(4).toString('hex')}`);
    mkdirSync(tmp, { mode: 0o700 });
    try {
      await unpackLayer(body, tmp, this.limits);
      try {
        await rename(tmp, this.paths.layer(layerId));
      } catch (err) {
        // Another import of the same layer finished first: its copy is as good as this one.
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
        await rm(tmp, { recursive: true, force: true });
      }
      await fsyncDir(this.paths.layers);
    } catch (err) {
      body.destroy();
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      if (err instanceof SandboxError) throw new SandboxError(err.code, `layer ${layerId}: ${err.message}`);
      throw new SandboxError('failed', `importing layer ${layerId} failed: ${(err as Error).message}`);
    }
  }
}
