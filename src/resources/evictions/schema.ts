import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Pending evictions: a box the server has decided to suspend, and by when. Kept in the database (not only in
 * the process) so a watcher connecting to any server sharing it is replayed what is pending; a row goes once
 * the box stops running (suspended, shut down or failed) and never matches a box that is not running.
 */
export const EVICTIONS_SCHEMA: ModuleSchema = {
  module: 'evictions',
  steps: [
    ddl`CREATE TABLE devbox_evictions (
       devbox_id ${KEY} PRIMARY KEY REFERENCES devboxes(id) ON DELETE CASCADE,
       account_id ${KEY} NOT NULL,
       reason TEXT NOT NULL,
       deadline_ms ${BIG} NOT NULL,
       create_time_ms ${BIG} NOT NULL
     );
     CREATE INDEX devbox_evictions_account ON devbox_evictions (account_id);`,
  ],
};
