import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Agents, and the agents each devbox mounted. `source` is the agent's source as the API shows it (JSON).
 * `devbox_agents` keeps, per box, the agent as it was resolved at create (name and source copied), so a box
 * boots what it asked for even if the agent is deleted meanwhile, and `devbox_counts` still names it; its
 * rows go with the box's record.
 */
export const AGENTS_SCHEMA: ModuleSchema = {
  module: 'agents',
  steps: [
    ddl`CREATE TABLE agents (
       id ${KEY} PRIMARY KEY,
       account_id TEXT NOT NULL REFERENCES accounts(id),
       name ${KEY} NOT NULL,
       version TEXT,
       source TEXT,
       is_public INTEGER NOT NULL DEFAULT 0,
       create_time_ms ${BIG} NOT NULL
     );
     CREATE INDEX agents_account ON agents (account_id, id);
     CREATE INDEX agents_account_name ON agents (account_id, name, id);
     CREATE INDEX agents_public ON agents (id) WHERE is_public = 1;
     CREATE TABLE devbox_agents (
       devbox_id ${KEY} NOT NULL REFERENCES devboxes(id) ON DELETE CASCADE,
       position INTEGER NOT NULL,
       account_id TEXT NOT NULL,
       agent_id ${KEY} NOT NULL,
       agent_name ${KEY} NOT NULL,
       agent TEXT NOT NULL,
       agent_path TEXT,
       PRIMARY KEY (devbox_id, position)
     );
     CREATE INDEX devbox_agents_account ON devbox_agents (account_id, agent_name);`,
  ],
};
