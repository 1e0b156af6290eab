import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * The public halves of the keys create_ssh_key issued, per devbox and its account: the only keys the SSH
 * front accepts (what a box's own `authorized_keys` says grants nothing). `fingerprint` is OpenSSH's
 * `SHA256:<base64>` of the key blob, the lookup at each login; the private half is kept nowhere.
 */
export const SSH_KEYS_SCHEMA: ModuleSchema = {
  module: 'ssh',
  steps: [
    ddl`CREATE TABLE devbox_ssh_keys (
       devbox_id ${KEY} NOT NULL REFERENCES devboxes(id) ON DELETE CASCADE,
       account_id ${KEY} NOT NULL,
       fingerprint ${KEY} NOT NULL,
       public_key TEXT NOT NULL,
       create_time_ms ${BIG} NOT NULL,
       PRIMARY KEY (devbox_id, fingerprint)
     );`,
  ],
};
