import { ERRORS } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import { hashToken } from './gateway-bindings.js';
import { SqlGatewayStore } from './sql-gateway-store.js';
import type { SecretLookup } from './types.js';

/** Where one proxied request goes and what the gateway writes on it. */
export interface UpstreamPlan {
  /** `https://api.example.com` */
  origin: string;
  /** The endpoint's own path without its trailing `/` (`''` for none); the box's path follows it. */
  basePath: string;
  /** Headers the gateway sets, in order (the credential, then custom headers), lower-case names. */
  headers: [string, string][];
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Decides whether a request from a box may pass, and with which credential. The token (`Authorization:
 * Bearer gws_…`) must be one of the box the connection comes from, for the binding its URL names; anything
 * else is a 401 and nothing goes upstream. The config and the secrets are read per request, so an update or
 * a secret rotation applies to the next request.
 */
export class GatewayAccess {
  private readonly store: SqlGatewayStore;

  constructor(
    db: Store,
    private readonly secrets: () => SecretLookup,
  ) {
    this.store = new SqlGatewayStore(db.db);
  }

  async plan(boxId: string, bindingId: string, authorization: string | undefined): Promise<UpstreamPlan> {
    const token = authorization && BEARER.exec(authorization)?.[1];
    if (!token) throw ERRORS.unauthenticated('missing gateway token: send "Authorization: Bearer $<PREFIX>"');
    const binding = await this.store.findBindingByTokenHash(hashToken(token));
    if (!binding || binding.devboxId !== boxId || binding.id !== bindingId) {
      throw ERRORS.unauthenticated('the gateway token is not valid for this devbox and URL');
    }
    const config = await this.store.getConfig(binding.accountId, binding.gatewayConfigId);
    if (!config) throw ERRORS.notFound('gateway config', `${binding.gatewayConfigId} (deleted)`);
    const secret = await this.secrets().reveal(binding.accountId, binding.secretId);
    const headers: [string, string][] = [];
    switch (config.auth.type) {
      case 'bearer':
        headers.push(['authorization', `Bearer ${secret.value}`]);
        break;
      case 'basic':
        headers.push(['authorization', `Basic ${Buffer.from(secret.value).toString('base64')}`]);
        break;
      case 'header':
        headers.push([config.auth.key!.toLowerCase(), secret.value]);
        break;
    }
    for (const h of config.customHeaders) {
      const value = h.secretId ? (await this.secrets().reveal(binding.accountId, h.secretId)).value : h.value!;
      headers.push([h.name.toLowerCase(), value]);
    }
    const url = new URL(config.endpoint);
    return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, ''), headers };
  }
}
