import { createHash } from 'node:crypto';
import { ERRORS } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import { newSecret } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { TERMINAL, type Devbox } from '../devboxes/index.js';
import type { McpConfigService } from './mcp-config-service.js';
import { SqlMcpTokenStore } from './sql-mcp-token-store.js';
import type { McpBinding, McpConfig, McpToken, SecretReader, Sealer } from './types.js';

/** The variable every box with `mcp` gets its box-wide token in (the hub's URL is in RL_MCP_URL). */
export const BOX_TOKEN_ENV = 'RL_MCP_TOKEN';
export const HUB_URL_ENV = 'RL_MCP_URL';

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
export const tokenAad = (devboxId: string, envName: string) => `mcp_token:${devboxId}:${envName}`;

/** What a token reaches: configs (as they are now) with the secret each is used with. */
export interface TokenScope {
  token: McpToken;
  upstreams: { config: McpConfig; secretId: string; envName: string | null }[];
}

/** A resolved `mcp` entry of a create request. */
export interface ResolvedSpec {
  envName: string;
  config: McpConfig;
  secretId: string;
}

/**
 * Hub tokens: minted for each `mcp` entry of a box (in the variable the entry's key names), one box-wide
 * token (RL_MCP_TOKEN) for all of them, and extra ones from create_mcp_token. The database keeps each
 * token's SHA-256 for lookup and, for those the box is given at each execution, the token sealed under
 * the master key; never the token in clear. Tokens go with their box when it ends.
 */
export class McpTokens {
  constructor(
    private readonly store: Store,
    private readonly configs: McpConfigService,
    private readonly secrets: () => SecretReader,
    private readonly sealer: () => Sealer,
    private readonly log?: Logger,
  ) {}

  tokens(db: Store = this.store): SqlMcpTokenStore {
    return new SqlMcpTokenStore(db.db);
  }

  /** Resolves the `mcp` map of a create request; 400 naming the entry for an unknown or ambiguous reference. */
  async resolveSpecs(accountId: string, mcp: Record<string, { mcpConfig: string; secret: string }>): Promise<ResolvedSpec[]> {
    const out: ResolvedSpec[] = [];
    for (const [envName, spec] of Object.entries(mcp)) {
      if (envName === BOX_TOKEN_ENV || envName === HUB_URL_ENV)
        throw ERRORS.invalid(`mcp.${envName}: ${envName} is set by the MCP hub itself; choose another variable name`);
      const config = await this.configs.resolve(accountId, spec.mcpConfig, `mcp.${envName}.mcp_config`);
      const secret = await this.secrets().resolve(accountId, spec.secret);
      if (!secret) throw ERRORS.invalid(`mcp.${envName}.secret: no secret "${spec.secret}" in this account`);
      out.push({ envName, config, secretId: secret.id });
    }
    return out;
  }

  /** Records the bindings and mints the box's tokens, in the transaction that inserts the box. */
  async persist(tx: Store, devbox: Devbox, specs: ResolvedSpec[]): Promise<void> {
    const store = this.tokens(tx);
    for (const s of specs) {
      const binding: McpBinding = { devboxId: devbox.id, envName: s.envName, mcpConfigId: s.config.id, secretId: s.secretId };
      await store.insertBinding(devbox.accountId, binding);
      await store.insertToken(this.mint(devbox, s.config.id, s.secretId, s.envName).row);
    }
    await store.insertToken(this.mint(devbox, null, null, BOX_TOKEN_ENV).row);
  }

  /** A further token for a box, bound to one config and secret, handed to the caller only (create_mcp_token). */
  async createToken(devbox: Devbox, mcpConfig: string, secret: string): Promise<{ token: string; config: McpConfig }> {
    if (TERMINAL.has(devbox.status)) throw ERRORS.devboxEnded(devbox.id, devbox.status);
    const config = await this.configs.resolve(devbox.accountId, mcpConfig, 'mcp_config');
    const s = await this.secrets().resolve(devbox.accountId, secret);
    if (!s) throw ERRORS.invalid(`secret: no secret "${secret}" in this account`);
    const minted = this.mint(devbox, config.id, s.id, null);
    await this.tokens().insertToken(minted.row);
    // The box may have ended meanwhile; its tokens went then, so this one goes too.
    const now = await this.store.devboxes.getById(devbox.id);
    if (!now || TERMINAL.has(now.status)) {
      await this.tokens().deleteTokens(devbox.id);
      throw ERRORS.devboxEnded(devbox.id, now?.status ?? 'gone');
    }
    return { token: minted.token, config };
  }

  /** The variables a box with `mcp` gets: the hub's URL, the box-wide token and one token per entry. */
  async environment(devbox: Devbox, hubUrl: string): Promise<Record<string, string>> {
    const rows = await this.tokens().boxTokens(devbox.id);
    if (!rows.length) return {};
    const env: Record<string, string> = { [HUB_URL_ENV]: hubUrl };
    for (const t of rows) {
      if (!t.envName || !t.sealed) continue;
      try {
        env[t.envName] = this.sealer().open(t.sealed, tokenAad(devbox.id, t.envName));
      } catch (err) {
        // Sealed under a key this server lacks (a misconfigured rotation): the box's commands still run,
        // without that variable.
        this.log?.error({ err, devbox: devbox.id, variable: t.envName }, 'an MCP hub token does not open; the box runs without it');
      }
    }
    return env;
  }

  /** `mcp_specs` of the view: each entry's config and secret, by the variable name. */
  async specs(devboxId: string): Promise<Record<string, { mcp_config_id: string; secret_id: string }> | null> {
    const bindings = await this.tokens().bindings(devboxId);
    if (!bindings.length) return null;
    return Object.fromEntries(bindings.map((b) => [b.envName, { mcp_config_id: b.mcpConfigId, secret_id: b.secretId }]));
  }

  /**
   * What a bearer token reaches, if it belongs to `boxId` (the box the connection came from); undefined for
   * any other token, a token of another box included.
   */
  async authenticate(boxId: string, bearer: string): Promise<TokenScope | undefined> {
    const token = await this.tokens().tokenByHash(hashToken(bearer));
    if (!token || token.devboxId !== boxId) return undefined;
    const pairs = token.mcpConfigId
      ? [{ mcpConfigId: token.mcpConfigId, secretId: token.secretId!, envName: token.envName }]
      : (await this.tokens().bindings(boxId)).map((b) => ({ mcpConfigId: b.mcpConfigId, secretId: b.secretId, envName: b.envName as string | null }));
    const configs = new Map(
      (
        await this.configs.many(
          token.accountId,
          pairs.map((p) => p.mcpConfigId),
        )
      ).map((c) => [c.id, c]),
    );
    const upstreams = pairs.flatMap((p) => {
      const config = configs.get(p.mcpConfigId);
      return config ? [{ config, secretId: p.secretId, envName: p.envName }] : [];
    });
    return { token, upstreams };
  }

  /** The box ended: its tokens go (its bindings stay, for the view's `mcp_specs`). */
  async endBox(devboxId: string): Promise<void> {
    await this.tokens().deleteTokens(devboxId);
  }

  private mint(devbox: Devbox, mcpConfigId: string | null, secretId: string | null, envName: string | null) {
    const token = newSecret('mcpt');
    const row: McpToken = {
      hash: hashToken(token),
      devboxId: devbox.id,
      accountId: devbox.accountId,
      mcpConfigId,
      secretId,
      envName,
      sealed: envName ? this.sealer().seal(token, tokenAad(devbox.id, envName)) : null,
      createTimeMs: Date.now(),
    };
    return { token, row };
  }
}
