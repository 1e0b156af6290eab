import { marks, type SqlExecutor } from '../../platform/store/sql/executor.js';
import type { McpBinding, McpToken } from './types.js';

interface BindingRow {
  devbox_id: string;
  env_name: string;
  account_id: string;
  mcp_config_id: string;
  secret_id: string;
}

interface TokenRow {
  hash: string;
  devbox_id: string;
  account_id: string;
  mcp_config_id: string | null;
  secret_id: string | null;
  env_name: string | null;
  sealed: string | null;
  create_time_ms: number;
}

const bindingFromRow = (r: BindingRow): McpBinding => ({ devboxId: r.devbox_id, envName: r.env_name, mcpConfigId: r.mcp_config_id, secretId: r.secret_id });

const tokenFromRow = (r: TokenRow): McpToken => ({
  hash: r.hash,
  devboxId: r.devbox_id,
  accountId: r.account_id,
  mcpConfigId: r.mcp_config_id,
  secretId: r.secret_id,
  envName: r.env_name,
  sealed: r.sealed,
  createTimeMs: Number(r.create_time_ms),
});

const TOKEN_COLUMNS = ['hash', 'devbox_id', 'account_id', 'mcp_config_id', 'secret_id', 'env_name', 'sealed', 'create_time_ms'];
const INSERT_TOKEN = `INSERT INTO mcp_tokens (${TOKEN_COLUMNS.join(', ')}) VALUES (${marks(TOKEN_COLUMNS)})`;

/** The `mcp` bindings of devboxes and the hub tokens they hold. */
export class SqlMcpTokenStore {
  constructor(private readonly db: SqlExecutor) {}

  async insertBinding(accountId: string, b: McpBinding): Promise<void> {
    await this.db.query('INSERT INTO mcp_bindings (devbox_id, env_name, account_id, mcp_config_id, secret_id) VALUES (?, ?, ?, ?, ?)', [
      b.devboxId,
      b.envName,
      accountId,
      b.mcpConfigId,
      b.secretId,
    ]);
  }

  async bindings(devboxId: string): Promise<McpBinding[]> {
    const { rows } = await this.db.query<BindingRow>('SELECT * FROM mcp_bindings WHERE devbox_id = ? ORDER BY env_name', [devboxId]);
    return rows.map(bindingFromRow);
  }

  async insertToken(t: McpToken): Promise<void> {
    await this.db.query(INSERT_TOKEN, [t.hash, t.devboxId, t.accountId, t.mcpConfigId, t.secretId, t.envName, t.sealed, t.createTimeMs]);
  }

  async tokenByHash(hash: string): Promise<McpToken | undefined> {
    const { rows } = await this.db.query<TokenRow>('SELECT * FROM mcp_tokens WHERE hash = ?', [hash]);
    return rows[0] && tokenFromRow(rows[0]);
  }

  /** The tokens the box is given in its environment. */
  async boxTokens(devboxId: string): Promise<McpToken[]> {
    const { rows } = await this.db.query<TokenRow>('SELECT * FROM mcp_tokens WHERE devbox_id = ? AND env_name IS NOT NULL ORDER BY env_name', [devboxId]);
    return rows.map(tokenFromRow);
  }

  /** Every token of the box goes (it ended). */
  async deleteTokens(devboxId: string): Promise<number> {
    return (await this.db.query('DELETE FROM mcp_tokens WHERE devbox_id = ?', [devboxId])).rowCount;
  }

  /** Tokens of boxes that ended while no server watched them (the devboxes table is the core's). */
  async deleteTokensOfEndedBoxes(): Promise<number> {
    const ended = "SELECT id FROM devboxes WHERE status IN ('shutdown', 'failure')";
    return (await this.db.query(`DELETE FROM mcp_tokens WHERE devbox_id IN (${ended})`)).rowCount;
  }
}
