import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * A devbox's tunnel (at most one per box). The key is the unguessable name in the tunnel's host name, unique
 * host-wide; the auth token of an authenticated tunnel is kept sealed under the master key (the view shows it
 * to the box's owner, so it cannot be a one-way hash).
 */
export const TUNNELS_SCHEMA: ModuleSchema = {
  module: 'tunnels',
  steps: [
    ddl`CREATE TABLE devbox_tunnels (
       devbox_id ${KEY} PRIMARY KEY REFERENCES devboxes(id) ON DELETE CASCADE,
       tunnel_key ${KEY} NOT NULL UNIQUE,
       auth_mode TEXT NOT NULL,
       auth_token_sealed TEXT,
       http_keep_alive INTEGER NOT NULL,
       wake_on_http INTEGER NOT NULL,
       create_time_ms ${BIG} NOT NULL
     );`,
  ],
};
