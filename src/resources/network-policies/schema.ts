import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Network policies and the devboxes bound to them. The egress rules are one JSON document (what the API
 * shows as `egress`); one name per account is a constraint. A box's binding is written with the box, so a
 * policy's delete can see, in one transaction, whether a box that has not ended still uses it.
 */
export const NETWORK_POLICIES_SCHEMA: ModuleSchema = {
  module: 'network_policies',
  steps: [
    ddl`CREATE TABLE network_policies (
       id ${KEY} PRIMARY KEY,
       account_id TEXT NOT NULL REFERENCES accounts(id),
       name ${KEY} NOT NULL,
       description TEXT,
       egress TEXT NOT NULL,
       create_time_ms ${BIG} NOT NULL,
       update_time_ms ${BIG} NOT NULL,
       CONSTRAINT network_policies_account_name UNIQUE (account_id, name)
     );
     CREATE TABLE devbox_network_policies (
       devbox_id ${KEY} PRIMARY KEY REFERENCES devboxes(id) ON DELETE CASCADE,
       policy_id ${KEY} NOT NULL REFERENCES network_policies(id)
     );
     CREATE INDEX devbox_network_policies_policy ON devbox_network_policies (policy_id);`,
  ],
};
