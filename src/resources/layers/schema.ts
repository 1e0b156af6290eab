import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Layers in the blob store (`layers/<id>`): one row per layer, `pending` while the node that has it uploads
 * it, then `stored` with the archive's size and sha256 (a fetch checks the bytes against them). And the
 * layers each node fetched from there: none of the other records say a node holds them, so these rows do,
 * and the node deletes its copy once nothing uses the layer.
 */
export const LAYERS_SCHEMA: ModuleSchema = {
  module: 'layers',
  steps: [
    ddl`CREATE TABLE layer_blobs (
       layer_id ${KEY} PRIMARY KEY,
       node TEXT NOT NULL,
       state TEXT NOT NULL CHECK (state IN ('pending', 'stored')),
       size_bytes ${BIG},
       sha256 TEXT,
       create_time_ms ${BIG} NOT NULL
     );
     CREATE TABLE layer_copies (
       layer_id ${KEY} NOT NULL,
       node ${KEY} NOT NULL,
       create_time_ms ${BIG} NOT NULL,
       PRIMARY KEY (node, layer_id)
     );`,
  ],
};
