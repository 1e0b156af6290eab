import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Storage objects: the record of each; its bytes are the blob `blob_key` names (`objects/<account>/<id>/<put>`,
 * one per PUT, so a PUT that lands after `complete` cannot change a completed object's bytes). `delete_after_time_ms`
 * is indexed for nothing on purpose: expiry is a durable job per object, and reads compare the time
 * themselves, so no query ever walks the objects by time.
 */
export const OBJECTS_SCHEMA: ModuleSchema = {
  module: 'objects',
  steps: [
    ddl`CREATE TABLE objects (
       id ${KEY} PRIMARY KEY,
       account_id TEXT NOT NULL REFERENCES accounts(id),
       name ${KEY} NOT NULL,
       content_type TEXT NOT NULL,
       state TEXT NOT NULL CHECK (state IN ('UPLOADING', 'READ_ONLY', 'DELETED', 'ERROR')),
       metadata TEXT NOT NULL,
       size_bytes ${BIG},
       create_time_ms ${BIG} NOT NULL,
       delete_after_time_ms ${BIG},
       is_public INTEGER NOT NULL DEFAULT 0,
       blob_key TEXT
     );
     CREATE INDEX objects_account ON objects (account_id, id);
     CREATE INDEX objects_public ON objects (id) WHERE is_public = 1;
     CREATE INDEX objects_deleted ON objects (id) WHERE state = 'DELETED';`,
  ],
};
