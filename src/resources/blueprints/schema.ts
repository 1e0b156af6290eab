import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Blueprints, their build logs (bounded per blueprint) and the step cache: a built layer by the digest of
 * its step's inputs, per node (layers are files on the node that built them), and the layers of the images its
 * services run from, per node.
 */
const steps = [
  ddl`CREATE TABLE blueprints (
     id ${KEY} PRIMARY KEY,
     account_id ${KEY} NOT NULL,
     name TEXT NOT NULL,
     status TEXT NOT NULL,
     failure_reason TEXT,
     failure_message TEXT,
     parameters TEXT NOT NULL,
     metadata TEXT NOT NULL,
     is_public INTEGER NOT NULL DEFAULT 0,
     base_blueprint_id ${KEY},
     layers TEXT NOT NULL,
     image TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL,
     build_finish_time_ms ${BIG},
     node TEXT NOT NULL
   );
   CREATE INDEX blueprints_account_name ON blueprints (account_id, name);
   CREATE TABLE blueprint_logs (
     blueprint_id ${KEY} NOT NULL,
     seq INTEGER NOT NULL,
     level TEXT NOT NULL,
     message TEXT NOT NULL,
     timestamp_ms ${BIG} NOT NULL,
     PRIMARY KEY (blueprint_id, seq)
   );
   CREATE TABLE blueprint_step_cache (
     node TEXT NOT NULL,
     cache_key ${KEY} NOT NULL,
     layer_id TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL,
     PRIMARY KEY (node, cache_key)
   );`,
  // v2: the image layers each blueprint's services were pulled onto a node: in use while the blueprint is, so
  // deleting another blueprint on the same image keeps them, and freed when no blueprint names them.
  ddl`CREATE TABLE blueprint_service_layers (
     blueprint_id ${KEY} NOT NULL,
     node TEXT NOT NULL,
     layer_id ${KEY} NOT NULL,
     PRIMARY KEY (blueprint_id, node, layer_id)
   );
   CREATE INDEX blueprint_service_layers_layer ON blueprint_service_layers (layer_id);`,
];

export const BLUEPRINTS_SCHEMA: ModuleSchema = {
  module: 'blueprints',
  steps,
};
