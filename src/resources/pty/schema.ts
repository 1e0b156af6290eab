import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * PTY tunnels: the key in the tunnel's host name (unique host-wide) and the SHA-256 of its auth token. The
 * token is handed out once, by create_pty_tunnel, and only ever compared afterwards: a digest, which nobody
 * can open back into the token, not even with the master key. Kept so that a tunnel outlives a server
 * restart, as the sessions behind it do.
 */
export const PTY_SCHEMA: ModuleSchema = {
  module: 'pty',
  steps: [
    ddl`CREATE TABLE pty_tunnels (
       tunnel_key ${KEY} PRIMARY KEY,
       devbox_id ${KEY} NOT NULL REFERENCES devboxes(id) ON DELETE CASCADE,
       token_sha256 TEXT NOT NULL,
       create_time_ms ${BIG} NOT NULL
     );
     CREATE INDEX pty_tunnels_devbox ON pty_tunnels (devbox_id, create_time_ms);`,
  ],
};
