import { BIG, ddl, eachDialect } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Gateway configs (per account, names unique in it; the system's, `anthropic` and `openai`, under the empty
 * account id, seen by every account and changed by none) and gateway bindings: one row per token a box holds,
 * from its create request's `gateways` map (with the variable prefix) or from `create_gateway_token` (no
 * prefix). A token is kept as its SHA-256 (the lookup key) and sealed under the server's master key (so it
 * can be handed to the box again at every execution); never in clear.
 */
const v1 = ddl`
  CREATE TABLE gateway_configs (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    name TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    auth_type TEXT NOT NULL,
    auth_key TEXT,
    description TEXT,
    custom_headers TEXT NOT NULL,
    create_time_ms ${BIG} NOT NULL,
    UNIQUE (account_id, name)
  );
  CREATE INDEX gateway_configs_account ON gateway_configs (account_id, id);
  CREATE TABLE gateway_bindings (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    devbox_id TEXT NOT NULL,
    prefix TEXT,
    gateway_config_id TEXT NOT NULL,
    secret_id TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    token_sealed TEXT NOT NULL,
    create_time_ms ${BIG} NOT NULL
  );
  CREATE INDEX gateway_bindings_devbox ON gateway_bindings (devbox_id);
  INSERT INTO gateway_configs (id, account_id, name, endpoint, auth_type, auth_key, description, custom_headers, create_time_ms) VALUES
    ('gwc_anthropic', '', 'anthropic', 'https://api.anthropic.com', 'header', 'x-api-key', 'Anthropic API (system config)', '[]', 0),
    ('gwc_openai', '', 'openai', 'https://api.openai.com', 'bearer', NULL, 'OpenAI API (system config)', '[]', 0);`;

/**
 * v2: ids order bytewise on PostgreSQL as on SQLite (cursors compare ids), as the MCP and secrets tables do;
 * SQLite's TEXT already compares bytes.
 */
const v2 = eachDialect({
  sqlite: ddl`SELECT 1;`,
  postgres: ddl`
  ALTER TABLE gateway_configs ALTER COLUMN id TYPE TEXT COLLATE "C";
  ALTER TABLE gateway_bindings ALTER COLUMN id TYPE TEXT COLLATE "C";`,
});

export const GATEWAY_SCHEMA: ModuleSchema = {
  module: 'gateway-configs',
  steps: [v1, v2],
};
