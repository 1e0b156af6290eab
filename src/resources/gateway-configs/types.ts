/** How the gateway applies the secret to a proxied request. */
export type AuthType = 'bearer' | 'header' | 'basic';

export interface AuthMechanism {
  type: AuthType;
  /** The header name, for `header` only. */
  key: string | null;
}

/**
 * A header added to every proxied request, after the credential: a literal value or a secret's value. A
 * literal value is held in `value` only between validation and sealing; stored, it is `sealedValue` (under
 * the master key, bound to its config and name) and `value` is null.
 */
export interface CustomHeader {
  name: string;
  value: string | null;
  sealedValue?: string | null;
  /** A `sec_` id (names given on writes are resolved to their id). */
  secretId: string | null;
}

export interface GatewayConfig {
  id: string;
  accountId: string;
  name: string;
  endpoint: string;
  auth: AuthMechanism;
  description: string | null;
  customHeaders: CustomHeader[];
  createTimeMs: number;
}

/** What create and update take; on update, an absent (undefined) field is unchanged. */
export interface GatewayConfigInput {
  name?: string;
  endpoint?: string;
  auth?: { type: string; key?: string | null };
  description?: string | null;
  customHeaders?: { name: string; value?: string | null; secret?: string | null }[];
}

export interface GatewayConfigFilters {
  id?: string;
  /** Part of the name. */
  name?: string;
  /** Part of the name, or the id. */
  search?: string;
}

/** One token a box holds for one gateway config and one secret. */
export interface GatewayBinding {
  id: string;
  accountId: string;
  devboxId: string;
  /** The environment-variable prefix from the create request; null for a token from `create_gateway_token`. */
  prefix: string | null;
  gatewayConfigId: string;
  secretId: string;
  /** SHA-256 (hex) of the token. */
  tokenHash: string;
  /** The token sealed under the master key, with the binding id as associated data. */
  tokenSealed: string;
  createTimeMs: number;
}

/** What the gateway needs of the secrets module (its SecretService fits). */
export interface SecretLookup {
  /** id or name → {id, name}, undefined when the account has no such secret. */
  resolve(accountId: string, ref: string): Promise<{ id: string; name: string } | undefined>;
  /** id or name → the value; a not-found domain error when absent. */
  reveal(accountId: string, ref: string): Promise<{ id: string; name: string; value: string }>;
}

/** The authenticated cipher under the server's master key (the secrets module's Sealer fits). */
export interface TokenSealer {
  seal(plain: string, aad: string): string;
  open(sealed: string, aad: string): string;
}
