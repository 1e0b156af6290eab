import type { Module } from '../../host.js';
import { devboxesModule } from '../devboxes/index.js';
import { type LayerConfig, loadLayerConfig } from './config.js';
import { LAYER_UPLOAD_JOB, LayerBlobs } from './layer-blobs.js';
import { LAYERS_SCHEMA } from './schema.js';
import { SqlLayerStore } from './sql-layer-store.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** Layers in the blob store: published by snapshots and blueprints, fetched before a box boots. */
    layers: LayerBlobs;
  }
}

/**
 * Layers that move between nodes through the blob store: each node copies the layers it makes there (a
 * durable upload job per layer) and fetches, before a box boots, the layers the box stands on that it lacks.
 */
export const layersModule: Module<LayerConfig> = {
  name: 'layers',
  needs: [devboxesModule],
  schema: LAYERS_SCHEMA,
  config: loadLayerConfig,
  build({ host, config, use }) {
    const enabled = config.blobs === 'on' || (config.blobs === 'auto' && host.config.blob.backend === 's3');
    const layers = new LayerBlobs(new SqlLayerStore(host.store.db), host.blobs, host.runtime, host.jobs, host.logger.child({ component: 'layers' }), {
      node: host.node,
      enabled,
    });
    // Uploads run in the background after a restart (one may take minutes), retried until the layer is stored.
    host.jobs.register(LAYER_UPLOAD_JOB, (job) => layers.upload(job.subjectId), { background: true, untilDone: true });
    use('devboxExtensions').beforeCreate((d) => layers.ensureLocal(d.layers));
    return { layers };
  },
};
