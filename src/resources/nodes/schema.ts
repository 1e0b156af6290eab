import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * The node registry: a row per server (DEVBOXD_NODE_NAME) sharing the database, written by that server at
 * start and at every renewal of its lease, and by another server only to declare it lost (see lease.ts). CPU
 * is kept in thousandths of a core, so a cgroup quota of 1.5 cores is exact on both databases.
 */
export const NODES_SCHEMA: ModuleSchema = {
  module: 'nodes',
  steps: [
    ddl`CREATE TABLE nodes (
       name ${KEY} PRIMARY KEY,
       address TEXT,
       cpu_millicores ${BIG} NOT NULL,
       memory_bytes ${BIG} NOT NULL,
       disk_bytes ${BIG} NOT NULL,
       state TEXT NOT NULL CHECK (state IN ('active', 'draining', 'lost')),
       heartbeat_ms ${BIG} NOT NULL,
       lease_expires_ms ${BIG} NOT NULL,
       grace_ms ${BIG} NOT NULL,
       started_at_ms ${BIG} NOT NULL,
       stopped_at_ms ${BIG},
       lost_at_ms ${BIG},
       version TEXT NOT NULL
     );`,
    // Where other API servers forward this node's requests (DEVBOXD_API_URL); null: none can.
    ddl`ALTER TABLE nodes ADD COLUMN api_url TEXT;`,
  ],
};
