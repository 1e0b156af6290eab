import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Secrets and the devboxes bound to them. A value is stored only sealed (AES-256-GCM, see sealer.ts) with
 * the id of the key that sealed it, so rotation finds what is left under an old key. One name per account
 * is a constraint, not a read-then-write, so concurrent creates cannot make duplicates either. A box's
 * bindings (environment variable → secret) are written with the box and read at every process start;
 * deleting a secret deletes its bindings.
 */
export const SECRETS_SCHEMA: ModuleSchema = {
  module: 'secrets',
  steps: [
    ddl`CREATE TABLE secrets (
       id ${KEY} PRIMARY KEY,
       account_id TEXT NOT NULL REFERENCES accounts(id),
       name ${KEY} NOT NULL,
       sealed_value TEXT NOT NULL,
       key_id TEXT NOT NULL,
       create_time_ms ${BIG} NOT NULL,
       update_time_ms ${BIG} NOT NULL,
       CONSTRAINT secrets_account_name UNIQUE (account_id, name)
     );
     CREATE INDEX secrets_key_id ON secrets (key_id);
     CREATE TABLE devbox_secrets (
       devbox_id ${KEY} NOT NULL REFERENCES devboxes(id) ON DELETE CASCADE,
       env_name TEXT NOT NULL,
       secret_id ${KEY} NOT NULL REFERENCES secrets(id) ON DELETE CASCADE,
       PRIMARY KEY (devbox_id, env_name)
     );
     CREATE INDEX devbox_secrets_secret ON devbox_secrets (secret_id);`,
  ],
};
