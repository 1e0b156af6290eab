import { ConfigError } from '../../platform/config-error.js';
import type { Env } from '../../platform/module/index.js';

/**
 * DEVBOXD_LAYER_BLOBS: whether each snapshot's and blueprint's layers are copied to the blob store once made,
 * so a box boots from them on any node. `auto` (the default) copies when the blob store is S3, which every
 * node reaches; the local-files store is one node's own (`<data>/blobs`), where a copy only doubles the disk a
 * layer takes. `on` copies to either; `off` copies nothing (layers then boot only where they were made).
 * Layers a node lacks are fetched from the blob store whatever this says.
 */
export interface LayerConfig {
  blobs: 'auto' | 'on' | 'off';
}

export function loadLayerConfig(env: Env): LayerConfig {
  const raw = env.DEVBOXD_LAYER_BLOBS || 'auto';
  if (raw !== 'auto' && raw !== 'on' && raw !== 'off') throw new ConfigError(`DEVBOXD_LAYER_BLOBS must be auto, on or off, got "${raw}"`);
  return { blobs: raw };
}
