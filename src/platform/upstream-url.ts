import { ERRORS } from './errors.js';

/**
 * An upstream a feature calls for a box (an MCP server, a gateway's API): an http(s) URL without credentials
 * in it, since those belong in a secret, where they are sealed and never shown. Modules add their own rules.
 */
export function parseUpstreamUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw ERRORS.invalid(`endpoint "${endpoint.slice(0, 200)}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw ERRORS.invalid('endpoint must be an http:// or https:// URL');
  if (url.username || url.password) throw ERRORS.invalid('endpoint must not carry credentials: put them in a secret');
  return url;
}
