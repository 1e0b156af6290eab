/** An MCP config: how the hub reaches one upstream MCP server and which of its tools a box may use. */
export interface McpConfig {
  id: string;
  accountId: string;
  /** A label that may be reused; the part before the first `-` is the service name tools are routed by. */
  name: string;
  endpoint: string;
  allowedTools: string[];
  auth: AuthMechanism;
  description: string | null;
  customHeaders: StoredHeader[];
  createTimeMs: number;
  updateTimeMs: number;
}

export type AuthType = 'bearer' | 'header' | 'basic';

export interface AuthMechanism {
  type: AuthType;
  /** The header name for `header`; null otherwise. */
  key: string | null;
}

/** A custom header as stored: a literal value sealed under the master key, or the id of a secret. */
export interface StoredHeader {
  name: string;
  sealedValue?: string;
  secretId?: string;
}

/** A custom header as a client writes it: a literal value, or a secret by name or id. */
export interface HeaderInput {
  name: string;
  value?: string | null;
  secret?: string | null;
}

export interface McpConfigInput {
  name?: string | null;
  endpoint?: string | null;
  allowedTools?: string[] | null;
  auth?: { type?: string | null; key?: string | null } | null;
  description?: string | null;
  customHeaders?: HeaderInput[] | null;
}

export interface McpConfigFilters {
  id?: string;
  /** Name prefix, case-insensitive. */
  name?: string;
  /** Id, or part of the name (case-insensitive). */
  search?: string;
}

/** One `mcp` entry of a devbox: the environment variable that holds its token, its config and its secret. */
export interface McpBinding {
  devboxId: string;
  envName: string;
  mcpConfigId: string;
  secretId: string;
}

/**
 * A hub token. `mcpConfigId` null: the box-wide token (RL_MCP_TOKEN), which reaches every binding of the
 * box; otherwise the token reaches that config with that secret only. `envName` names the variable the
 * box gets it in (null for tokens minted by create_mcp_token, handed to the caller only).
 */
export interface McpToken {
  hash: string;
  devboxId: string;
  accountId: string;
  mcpConfigId: string | null;
  secretId: string | null;
  envName: string | null;
  /** The token sealed under the master key, so each execution gets it again; null when not given to the box. */
  sealed: string | null;
  createTimeMs: number;
}

/** What the MCP module needs of the secrets module (src/resources/secrets/secret-service.ts). */
export interface SecretReader {
  /** Id (sec_…) or name → id, name and value; throws a not-found domain error when absent. */
  reveal(accountId: string, ref: string): Promise<{ id: string; name: string; value: string }>;
  /** Id or name → id and name, without decrypting; undefined when absent. */
  resolve(accountId: string, ref: string): Promise<{ id: string; name: string } | undefined>;
}

/** The authenticated cipher under the master key (src/platform/sealing/sealer.ts). */
export interface Sealer {
  seal(plain: string, aad: string): string;
  open(sealed: string, aad: string): string;
}
