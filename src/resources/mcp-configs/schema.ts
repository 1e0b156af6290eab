import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * The MCP module's tables: configs, the `mcp` bindings of each devbox, and the hub tokens boxes hold (by
 * SHA-256, with the token sealed when the box is given it again at each execution; never in clear).
 */
const v1 = ddl`
  CREATE TABLE mcp_configs (
    id ${KEY} PRIMARY KEY,
    account_id TEXT NOT NULL,
    name TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    allowed_tools TEXT NOT NULL,
    auth_type TEXT NOT NULL,
    auth_key TEXT,
    description TEXT,
    custom_headers TEXT NOT NULL,
    create_time_ms ${BIG} NOT NULL,
    update_time_ms ${BIG} NOT NULL
  );
  CREATE INDEX mcp_configs_account ON mcp_configs (account_id, id);
  CREATE INDEX mcp_configs_name ON mcp_configs (account_id, name);
  CREATE TABLE mcp_bindings (
    devbox_id TEXT NOT NULL,
    env_name TEXT NOT NULL,
    account_id TEXT NOT NULL,
    mcp_config_id TEXT NOT NULL,
    secret_id TEXT NOT NULL,
    PRIMARY KEY (devbox_id, env_name)
  );
  CREATE TABLE mcp_tokens (
    hash TEXT PRIMARY KEY,
    devbox_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    mcp_config_id TEXT,
    secret_id TEXT,
    env_name TEXT,
    sealed TEXT,
    create_time_ms ${BIG} NOT NULL
  );
  CREATE INDEX mcp_tokens_devbox ON mcp_tokens (devbox_id);
`;

export const MCP_SCHEMA: ModuleSchema = {
  module: 'mcp-configs',
  steps: [v1],
};
