import { ERRORS } from '../../platform/errors.js';
import type { AuthMechanism, AuthType, CustomHeader, SecretLookup } from './types.js';
import type { OutboundGuard } from '../../platform/outbound/index.js';
import { parseUpstreamUrl } from '../../platform/upstream-url.js';
import { HOP_BY_HOP } from '../../platform/http/hop-by-hop.js';

/** At most this many custom headers per config (the SDK says 8). */
export const MAX_CUSTOM_HEADERS = 8;

/** An HTTP field name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;
/** A field value a proxy can send as is: visible ASCII, spaces and tabs, no CR, LF or NUL. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Headers the gateway owns: hop-by-hop ones (RFC 9110 §7.6.1), the framing of the request and the host the
 * endpoint names. A config may not set them, neither as the credential's header nor as a custom header.
 */
export const RESERVED_HEADERS = new Set([...HOP_BY_HOP, 'host', 'content-length', 'expect']);

const AUTH_TYPES: AuthType[] = ['bearer', 'header', 'basic'];

export function checkHeaderName(name: string, field: string): string {
  if (!HEADER_NAME.test(name)) throw ERRORS.invalid(`${field} "${name.slice(0, 100)}" is not a valid HTTP header name`);
  if (RESERVED_HEADERS.has(name.toLowerCase())) throw ERRORS.invalid(`${field} "${name}" is set by the gateway itself and cannot be configured`);
  return name;
}

/** An http(s) URL without credentials or fragment; the path it has prefixes every proxied path. */
export function checkEndpoint(endpoint: string, outbound: OutboundGuard): string {
  const url = parseUpstreamUrl(endpoint, outbound);
  if (url.hash || endpoint.includes('#')) throw ERRORS.invalid('endpoint must not have a fragment');
  if (url.search) throw ERRORS.invalid('endpoint must not have a query string');
  return endpoint.replace(/\/+$/, '') || endpoint;
}

export function checkAuth(auth: { type: string; key?: string | null }): AuthMechanism {
  if (!AUTH_TYPES.includes(auth.type as AuthType)) {
    throw ERRORS.invalid(`auth_mechanism.type "${auth.type}" must be one of ${AUTH_TYPES.join(', ')}`);
  }
  const type = auth.type as AuthType;
  const key = auth.key ?? null;
  if (type === 'header') {
    if (!key) throw ERRORS.invalid('auth_mechanism.key is required for type header (the header that carries the secret, e.g. x-api-key)');
    checkHeaderName(key, 'auth_mechanism.key');
  } else if (key !== null && key !== '') {
    throw ERRORS.invalid(`auth_mechanism.key is only valid for type header, not ${type}`);
  }
  return { type, key: type === 'header' ? key : null };
}

/** Validates the list and resolves each secret (a name or `sec_` id) to its id: an unknown one is a 400. */
export async function checkCustomHeaders(
  accountId: string,
  headers: { name: string; value?: string | null; secret?: string | null }[],
  secrets: SecretLookup,
): Promise<CustomHeader[]> {
  if (headers.length > MAX_CUSTOM_HEADERS) throw ERRORS.invalid(`custom_headers holds at most ${MAX_CUSTOM_HEADERS} entries`);
  const seen = new Set<string>();
  const out: CustomHeader[] = [];
  for (const [i, h] of headers.entries()) {
    const field = `custom_headers[${i}]`;
    checkHeaderName(h.name, `${field}.name`);
    if (seen.has(h.name.toLowerCase())) throw ERRORS.invalid(`${field}.name "${h.name}" appears twice`);
    seen.add(h.name.toLowerCase());
    const hasValue = h.value !== undefined && h.value !== null;
    const hasSecret = h.secret !== undefined && h.secret !== null;
    if (hasValue === hasSecret) throw ERRORS.invalid(`${field} needs exactly one of value and secret`);
    if (hasValue) {
      if (!HEADER_VALUE.test(h.value!)) throw ERRORS.invalid(`${field}.value must not contain control characters (CR, LF, NUL)`);
      out.push({ name: h.name, value: h.value!, secretId: null });
      continue;
    }
    const secret = await secrets.resolve(accountId, h.secret!);
    if (!secret) throw ERRORS.invalid(`${field}.secret: secret ${h.secret} not found`);
    out.push({ name: h.name, value: null, secretId: secret.id });
  }
  return out;
}
