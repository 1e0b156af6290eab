import { createHash } from 'node:crypto';
import { ERRORS } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import { newId, newSecret } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { CreateDevboxInput } from '../devboxes/index.js';
import type { CreateResolution } from '../devboxes/index.js';
import { TERMINAL, type Devbox } from '../devboxes/index.js';
import type { GatewayConfigService } from './gateway-config-service.js';
import { sealGatewayHeaders } from './reseal.js';
import { SqlGatewayStore } from './sql-gateway-store.js';
import type { GatewayBinding, GatewayConfig, SecretLookup, TokenSealer } from './types.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Gateways one box may name at create (each costs two variables and a token). */
export const MAX_GATEWAYS = 64;

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** A token minted for a box: what `create_gateway_token` answers. */
export interface MintedToken {
  token: string;
  url: string;
  devboxId: string;
  config: GatewayConfig;
}

export interface GatewayBindingsOptions {
  /** Where a box reaches the box services (`http://127.0.0.1:<port>`); a binding's URL is under it. */
  baseUrl: string;
}

/**
 * The agent gateway's side of a devbox: the `gateways` map at create (validated, then recorded with the box
 * in one transaction), the variables each box gets (`<PREFIX>_URL`, `<PREFIX>` = its token), the view's
 * `gateway_specs`, extra tokens, and the end of every token with its box.
 */
export class GatewayBindings {
  private readonly store: SqlGatewayStore;

  constructor(
    private readonly db: Store,
    private readonly configs: GatewayConfigService,
    private readonly secrets: () => SecretLookup,
    private readonly sealer: () => TokenSealer,
    private readonly opts: GatewayBindingsOptions,
    private readonly log: Logger,
  ) {
    this.store = new SqlGatewayStore(db.db);
  }

  /** The URL a binding's requests go to, inside the box. */
  urlOf(bindingId: string): string {
    return `${this.opts.baseUrl}/gateway/${bindingId}`;
  }

  /** Create resolver: every gateway and secret must exist in the account; prefixes must be variable names. */
  async resolve(accountId: string, input: CreateDevboxInput): Promise<CreateResolution | undefined> {
    const entries = Object.entries(input.gateways ?? {});
    if (!entries.length) return undefined;
    if (entries.length > MAX_GATEWAYS) throw ERRORS.invalid(`gateways holds at most ${MAX_GATEWAYS} entries`);
    const taken = new Map<string, string>();
    for (const name of Object.keys(input.environmentVariables ?? {})) taken.set(name, 'environment_variables');
    for (const name of Object.keys(input.secrets ?? {})) taken.set(name, 'secrets');
    const mcp = Object.keys(input.mcp ?? {});
    for (const name of mcp.length ? [...mcp, 'RL_MCP_URL', 'RL_MCP_TOKEN'] : []) taken.set(name, 'mcp');
    // Every name is checked before anything is looked up, so a request with several faults names the first.
    for (const [prefix] of entries) {
      if (!ENV_NAME.test(prefix) || prefix.length > 200) {
        throw ERRORS.invalid(`gateways: "${prefix.slice(0, 200)}" is not a valid environment variable name (letters, digits and _, not starting with a digit)`);
      }
      for (const name of [prefix, `${prefix}_URL`]) {
        const other = taken.get(name);
        if (other) throw ERRORS.invalid(`gateways.${prefix}: the variable ${name} is also set by ${other}`);
        taken.set(name, `gateways.${prefix}`);
      }
    }
    const resolved: { prefix: string; config: GatewayConfig; secretId: string }[] = [];
    for (const [prefix, spec] of entries) {
      const { config, secretId } = await this.resolveSpec(accountId, spec.gateway, spec.secret, `gateways.${prefix}.`);
      resolved.push({ prefix, config, secretId });
    }
    return {
      persist: async (tx: Store, devbox: Devbox) => {
        const store = new SqlGatewayStore(tx.db);
        for (const r of resolved) await store.insertBinding(this.newBinding(devbox, r.prefix, r.config.id, r.secretId).binding);
      },
      viewPart: 'gateway',
    };
  }

  /** `<PREFIX>_URL` and `<PREFIX>` (the token) for each binding the box was created with. */
  async environment(devbox: Devbox): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const b of await this.store.bindingsOf(devbox.id)) {
      // No token: the box ended (its binding stays for gateway_specs only), and it gets none again.
      if (b.prefix === null || b.tokenSealed === '') continue;
      env[`${b.prefix}_URL`] = this.urlOf(b.id);
      env[b.prefix] = await this.tokenOf(b);
    }
    return env;
  }

  /**
   * The binding's token in clear. A token that does not open (sealed under a master key the server no longer
   * holds, which `secrets rotate-key` avoids by re-sealing tokens too) is replaced by a new one, which the
   * box's next processes get; its running processes keep the old one, which no longer passes.
   */
  private async tokenOf(b: GatewayBinding): Promise<string> {
    try {
      return this.sealer().open(b.tokenSealed, b.id);
    } catch (err) {
      const token = newSecret('gws');
      if (await this.store.replaceToken(b.id, b.tokenHash, hashToken(token), this.sealer().seal(token, b.id))) {
        this.log.warn({ err: (err as Error).message, devbox: b.devboxId, binding: b.id }, 'gateway token did not open; a new one was issued');
        return token;
      }
      const now = await this.store.getBinding(b.id);
      if (!now) throw err;
      return this.sealer().open(now.tokenSealed, now.id);
    }
  }

  /** `gateway_specs` of the view: the create request's bindings, by prefix. */
  async enrich(devbox: Devbox): Promise<Record<string, unknown>> {
    const specs: Record<string, { gateway_config_id: string; secret_id: string }> = {};
    for (const b of await this.store.bindingsOf(devbox.id)) {
      if (b.prefix !== null) specs[b.prefix] = { gateway_config_id: b.gatewayConfigId, secret_id: b.secretId };
    }
    return Object.keys(specs).length ? { gateway_specs: specs } : {};
  }

  /** A further token bound to a box that has not ended (`create_gateway_token`); it ends with the box. */
  async mint(devbox: Devbox, gateway: string, secret: string): Promise<MintedToken> {
    if (TERMINAL.has(devbox.status)) throw ERRORS.devboxEnded(devbox.id, devbox.status);
    const { config, secretId } = await this.resolveSpec(devbox.accountId, gateway, secret, '');
    const { binding, token } = this.newBinding(devbox, null, config.id, secretId);
    await this.store.insertBinding(binding);
    // The box may have ended between the check and the insert; its tokens go with it either way.
    if (await this.ended(devbox.id)) await this.store.deleteBindingsOf(devbox.id);
    return { token, url: this.urlOf(binding.id), devboxId: devbox.id, config };
  }

  /** Stop listener: a box that ended (not one suspended) loses its tokens. */
  async stopped(devboxId: string): Promise<void> {
    if (await this.ended(devboxId)) await this.store.deleteBindingsOf(devboxId);
  }

  /**
   * At start: tokens of boxes that ended while no server watched them go, and literal header values
   * written in clear by an earlier version are sealed.
   */
  async reconcile(): Promise<number> {
    await this.db.transaction((tx) => sealGatewayHeaders(tx.db, this.sealer()));
    return this.store.deleteBindingsOfEndedBoxes();
  }

  private async ended(devboxId: string): Promise<boolean> {
    const d = await this.db.devboxes.getById(devboxId);
    return !d || TERMINAL.has(d.status);
  }

  private async resolveSpec(accountId: string, gateway: string, secret: string, field: string) {
    const config = await this.configs.find(accountId, gateway);
    if (!config) throw ERRORS.invalid(`${field}gateway: gateway config ${gateway} not found`);
    const s = await this.secrets().resolve(accountId, secret);
    if (!s) throw ERRORS.invalid(`${field}secret: secret ${secret} not found`);
    return { config, secretId: s.id };
  }

  private newBinding(devbox: Devbox, prefix: string | null, gatewayConfigId: string, secretId: string) {
    const id = newId('gwb');
    const token = newSecret('gws');
    const binding: GatewayBinding = {
      id,
      accountId: devbox.accountId,
      devboxId: devbox.id,
      prefix,
      gatewayConfigId,
      secretId,
      tokenHash: hashToken(token),
      tokenSealed: this.sealer().seal(token, id),
      createTimeMs: Date.now(),
    };
    return { binding, token };
  }
}
