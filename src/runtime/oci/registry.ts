/**
 * A client of the Docker Registry HTTP API v2 (OCI distribution): manifests and blobs of one repository,
 * anonymous or with credentials. A 401 is answered the way its challenge asks: `Bearer realm,service,scope`
 * fetches a token from the realm (with the basic credentials, if any) and retries; `Basic` retries with them.
 * Tokens are kept per registry, scope and credentials until they expire. Blob redirects (to object storage)
 * are followed, without the registry's Authorization when they leave its origin. Nothing is verified here:
 * the caller checks every byte against its digest.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { type LazyAgent, type OutboundGuard, outboundRefusal } from '../../platform/outbound/index.js';
import { SandboxError, type RegistryAuth } from '../driver.js';
import { MANIFEST_ACCEPT, type Descriptor } from './manifest.js';
import { apiHost, DOCKER_HUB } from './reference.js';

export interface RegistryOptions {
  /** The outbound guard every connection passes (registry, token realm, blob redirect). */
  outbound: OutboundGuard;
  /** Registries (`host` or `host:port`) reached over plain http (DEVBOXD_REGISTRY_INSECURE). */
  insecure: string[];
  /**
   * Registries (`host` or `host:port`) images may be pulled from (DEVBOXD_REGISTRY_ALLOW), beside the default
   * one and the insecure ones (a host without a port: any of its ports); empty: any. Only the registry a
   * reference names is checked: what it redirects to (blob storage, its token realm) follows from it.
   */
  allow?: string[];
  /** The registry of references that name none: always allowed. */
  defaultRegistry?: string;
  /** No connection within this long fails the request. */
  connectTimeoutMs?: number;
  /** No response head, or a silence inside a body, of this long fails the request. */
  idleTimeoutMs?: number;
}

const MAX_DOCUMENT_BYTES = 4 << 20;
const MAX_REDIRECTS = 5;
/** Seconds a token is kept when its answer names no lifetime (the distribution spec's default). */
const DEFAULT_TOKEN_SECONDS = 60;

interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

function parseChallenge(header: string | string[] | undefined): Challenge | null {
  const text = Array.isArray(header) ? header[0] : header;
  const m = text ? /^\s*(\w+)\s*(.*)$/s.exec(text) : null;
  if (!m) return null;
  const params: Record<string, string> = {};
  for (const p of m[2]!.matchAll(/(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) params[p[1]!.toLowerCase()] = p[2] ?? p[3] ?? '';
  return { scheme: m[1]!.toLowerCase(), params };
}

/** Reads a small body whole, refusing more than `max` bytes. */
export async function readBounded(body: Readable, max: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    n += chunk.length;
    if (n > max) {
      body.destroy();
      throw new SandboxError('failed', `the registry sent a ${what} over ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export class RegistryClient {
  private readonly agent: LazyAgent;
  private readonly insecure: Set<string>;
  /** Null: any registry. */
  private readonly allow: Set<string> | null;
  private readonly tokens = new Map<string, { value: string; expires: number }>();

  constructor(opts: RegistryOptions) {
    this.insecure = new Set(opts.insecure.map((h) => h.toLowerCase()));
    // Docker Hub by any of its names is the host its API answers on, as sessions name it.
    const named = (h: string) => (h.toLowerCase() === 'index.docker.io' ? apiHost(DOCKER_HUB) : apiHost(h.toLowerCase()));
    this.allow = opts.allow?.length ? new Set([...opts.allow, ...opts.insecure, ...(opts.defaultRegistry ? [opts.defaultRegistry] : [])].map(named)) : null;
    const idle = opts.idleTimeoutMs ?? 60_000;
    this.agent = opts.outbound.agent({ connect: { timeout: opts.connectTimeoutMs ?? 30_000 }, headersTimeout: idle, bodyTimeout: idle });
  }

  /** Whether `url` may be fetched: https, or http to a host named insecure. */
  allowed(url: URL): boolean {
    if (url.protocol === 'https:') return true;
    return url.protocol === 'http:' && (this.insecure.has(url.host.toLowerCase()) || this.insecure.has(url.hostname.toLowerCase()));
  }

  baseUrl(registry: string): string {
    const host = apiHost(registry);
    const insecure = this.insecure.has(host.toLowerCase()) || this.insecure.has(host.replace(/:\d+$/, '').toLowerCase());
    return `${insecure ? 'http' : 'https'}://${host}`;
  }

  /**
   * A session with one repository of `registry`, refused (before any request) when the registry is not one
   * this server pulls from: a tenant's FROM or service image must not make the server probe other hosts.
   */
  session(registry: string, repository: string, auth?: RegistryAuth, signal?: AbortSignal): RegistrySession {
    const host = apiHost(registry).toLowerCase();
    if (this.allow && !this.allow.has(host) && !this.allow.has(host.replace(/:\d+$/, ''))) {
      throw new SandboxError('failed', `registry ${registry} is not one this server pulls images from (DEVBOXD_REGISTRY_ALLOW)`);
    }
    return new RegistrySession(this, registry, repository, auth, signal);
  }

  /** A cached token, keyed by registry, scope and a hash of the credentials (never the credentials). */
  tokenKey(registry: string, scope: string, auth?: RegistryAuth): string {
    const who = auth && 'username' in auth ? createHash('sha256').update(`${auth.username}\0${auth.password}`).digest('hex') : '';
    return `${registry} ${scope} ${who}`;
  }

  cachedToken(key: string): string | undefined {
    const t = this.tokens.get(key);
    if (t && t.expires > Date.now()) return t.value;
    this.tokens.delete(key);
    return undefined;
  }

  keepToken(key: string, value: string, seconds: number): void {
    if (this.tokens.size > 1000) this.tokens.clear();
    this.tokens.set(key, { value, expires: Date.now() + Math.max(seconds - 10, 5) * 1000 });
  }

  send(url: URL, headers: Record<string, string>, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    if (!this.allowed(url)) throw new SandboxError('failed', `refusing ${url.origin}: plain http is allowed only to hosts in DEVBOXD_REGISTRY_INSECURE`);
    return this.agent.request({ origin: url.origin, path: url.pathname + url.search, method: 'GET', headers, signal }).catch((err: Error) => {
      if (signal?.aborted) throw signal.reason ?? err;
      // One message for every refused address, before any connection: nothing tells an open port from a closed one.
      if (outboundRefusal(err)) throw new SandboxError('failed', `registry ${url.host} is refused by the server's outbound rules`);
      throw new SandboxError('failed', `registry ${url.host} did not answer: ${err.message}`);
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export class RegistrySession {
  private authorization: string | undefined;
  private readonly scope: string;

  constructor(
    private readonly client: RegistryClient,
    private readonly registry: string,
    private readonly repository: string,
    private readonly auth: RegistryAuth | undefined,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.scope = `repository:${repository}:pull`;
    if (auth && 'token' in auth) this.authorization = `Bearer ${auth.token}`;
    else this.authorization = this.cachedBearer(this.scope);
  }

  private cachedBearer(scope: string): string | undefined {
    const t = this.client.cachedToken(this.client.tokenKey(this.registry, scope, this.auth));
    return t ? `Bearer ${t}` : undefined;
  }

  /** The manifest or index `reference` (a tag or a digest) names, as sent. */
  async manifest(reference: string): Promise<{ body: Buffer; contentType: string }> {
    const res = await this.get(`/v2/${this.repository}/manifests/${reference}`, MANIFEST_ACCEPT, `manifest ${reference}`);
    const body = await readBounded(res.body, MAX_DOCUMENT_BYTES, 'manifest');
    return { body, contentType: String(res.headers['content-type'] ?? '') };
  }

  /** A small blob (an image config) whole, checked against its descriptor. */
  async blobBytes(desc: Descriptor): Promise<Buffer> {
    if (desc.size > MAX_DOCUMENT_BYTES) throw new SandboxError('failed', `the image config is ${desc.size} bytes (at most ${MAX_DOCUMENT_BYTES})`);
    const body = await readBounded(await this.blob(desc), MAX_DOCUMENT_BYTES, 'config');
    const got = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    if (got !== desc.digest) throw new SandboxError('failed', `blob ${desc.digest} failed verification: its content hashes to ${got}`);
    return body;
  }

  /** A blob's bytes as a stream, unverified (the caller hashes them). */
  async blob(desc: Descriptor): Promise<Readable> {
    const res = await this.get(`/v2/${this.repository}/blobs/${desc.digest}`, '*/*', `blob ${desc.digest}`);
    return res.body;
  }

  private async get(path: string, accept: string, what: string): Promise<Dispatcher.ResponseData> {
    const base = this.client.baseUrl(this.registry);
    let url = new URL(path, base);
    let challenged = false;
    for (let hops = 0; ; ) {
      const sameOrigin = url.origin === new URL(base).origin;
      const headers: Record<string, string> = { accept, 'user-agent': 'devboxd' };
      if (sameOrigin && this.authorization) headers.authorization = this.authorization;
      const res = await this.client.send(url, headers, this.signal);
      if (res.statusCode === 401 && sameOrigin && !challenged) {
        challenged = true;
        const challenge = parseChallenge(res.headers['www-authenticate']);
        await res.body.dump();
        await this.answer(challenge, what);
        continue;
      }
      if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location) {
        await res.body.dump();
        if (++hops > MAX_REDIRECTS) throw new SandboxError('failed', `registry ${this.registry}: too many redirects for ${what}`);
        url = new URL(String(res.headers.location), url);
        continue;
      }
      if (res.statusCode === 200) return res;
      // The registry's own error text helps; a redirect target's (anywhere the registry pointed) is not shown.
      const text = sameOrigin ? await readBounded(res.body, 64 << 10, 'error').catch(() => Buffer.alloc(0)) : (await res.body.dump(), Buffer.alloc(0));
      const detail = text.toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 300);
      const where = `${this.registry}/${this.repository}`;
      if (res.statusCode === 401 || res.statusCode === 403) {
        throw new SandboxError(
          'failed',
          this.auth
            ? `registry ${this.registry} refused the credentials for ${where} (${res.statusCode})`
            : `registry ${this.registry} requires credentials for ${where} (${res.statusCode})`,
        );
      }
      if (res.statusCode === 404) throw new SandboxError('not_found', `${where}: ${what} not found`);
      throw new SandboxError('failed', `registry ${this.registry} answered ${res.statusCode} for ${what}${detail ? `: ${detail}` : ''}`);
    }
  }

  /** Acts on a 401's challenge: fetches a bearer token, or uses the basic credentials. */
  private async answer(challenge: Challenge | null, what: string): Promise<void> {
    const where = `${this.registry}/${this.repository}`;
    if (this.auth && 'token' in this.auth) throw new SandboxError('failed', `registry ${this.registry} refused the token for ${where}`);
    if (challenge?.scheme === 'basic') {
      if (!this.auth) throw new SandboxError('failed', `registry ${this.registry} requires credentials for ${where}`);
      this.authorization = `Basic ${Buffer.from(`${this.auth.username}:${this.auth.password}`).toString('base64')}`;
      return;
    }
    if (challenge?.scheme !== 'bearer' || !challenge.params.realm)
      throw new SandboxError('failed', `registry ${this.registry} asked for an authentication devboxd does not speak for ${what}`);
    const scope = challenge.params.scope || this.scope;
    const key = this.client.tokenKey(this.registry, scope, this.auth);
    let realm: URL;
    try {
      realm = new URL(challenge.params.realm);
    } catch {
      throw new SandboxError('failed', `registry ${this.registry} named an invalid token realm`);
    }
    if (challenge.params.service) realm.searchParams.set('service', challenge.params.service);
    realm.searchParams.set('scope', scope);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'devboxd' };
    if (this.auth) headers.authorization = `Basic ${Buffer.from(`${this.auth.username}:${this.auth.password}`).toString('base64')}`;
    const res = await this.client.send(realm, headers, this.signal);
    const body = await readBounded(res.body, 1 << 20, 'token answer');
    if (res.statusCode === 401 || res.statusCode === 403) {
      throw new SandboxError(
        'failed',
        this.auth ? `registry ${this.registry} refused the credentials for ${where}` : `registry ${this.registry} requires credentials for ${where}`,
      );
    }
    if (res.statusCode !== 200) throw new SandboxError('failed', `the token service of ${this.registry} answered ${res.statusCode}`);
    let doc: { token?: unknown; access_token?: unknown; expires_in?: unknown };
    try {
      doc = JSON.parse(body.toString('utf8')) as typeof doc;
    } catch {
      throw new SandboxError('failed', `the token service of ${this.registry} sent no JSON`);
    }
    const token = typeof doc.token === 'string' ? doc.token : typeof doc.access_token === 'string' ? doc.access_token : '';
    if (!token || /[\r\n]/.test(token)) throw new SandboxError('failed', `the token service of ${this.registry} sent no token`);
    this.client.keepToken(key, token, typeof doc.expires_in === 'number' ? doc.expires_in : DEFAULT_TOKEN_SECONDS);
    this.authorization = `Bearer ${token}`;
  }
}
