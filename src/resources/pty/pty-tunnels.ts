import crypto from 'node:crypto';
import type http from 'node:http';
import type http2 from 'node:http2';
import { ERRORS } from '../../platform/errors.js';
import type { Store } from '../../platform/store/types.js';
import type { DevboxService } from '../devboxes/index.js';

/** A PTY tunnel: the box its host name reaches and the digest of the token every request must carry. */
export interface PtyTunnel {
  key: string;
  devboxId: string;
  /** SHA-256 of the auth token, hex (the token itself is handed out once, at create). */
  tokenSha256: string;
  createdAtMs: number;
}

interface PtyTunnelRow {
  tunnel_key: string;
  devbox_id: string;
  token_sha256: string;
  create_time_ms: number | string;
}

/** Tunnels one box holds at once; a further one replaces the oldest. */
const PER_BOX = 64;
/** How long a looked-up key (a tunnel, or none) is trusted without reading the table again. */
const CACHE_MS = 2000;
const CACHE_MAX = 10_000;

/**
 * PTY tunnels: fresh on every create_pty_tunnel, never on the devbox view, always authenticated. Stored
 * (pty_tunnels, the token as a digest), so they outlive a server restart as the sessions behind them do; they
 * last until the box ends (suspend and resume keep them). Every tunnel request looks its key up here, API
 * tunnels' too, so lookups are cached briefly, misses included.
 */
export class PtyTunnels {
  private readonly cache = new Map<string, { tunnel: PtyTunnel | undefined; atMs: number }>();

  constructor(
    private readonly store: Store,
    private readonly devboxes: () => DevboxService,
  ) {}

  /** A new tunnel for a running box (400 otherwise, like enable_tunnel), with its token in clear, once. */
  async create(accountId: string, devboxId: string): Promise<PtyTunnel & { authToken: string }> {
    const d = await this.devboxes().get(accountId, devboxId);
    if (d.status !== 'running') throw ERRORS.devboxNotRunning(d.id, d.status);
    const authToken = crypto.randomBytes(24).toString('base64url');
    const t: PtyTunnel = { key: crypto.randomBytes(16).toString('hex'), devboxId: d.id, tokenSha256: digest(authToken), createdAtMs: Date.now() };
    await this.store.transaction(async (tx) => {
      await tx.db.query('INSERT INTO pty_tunnels (tunnel_key, devbox_id, token_sha256, create_time_ms) VALUES (?, ?, ?, ?)', [
        t.key,
        t.devboxId,
        t.tokenSha256,
        t.createdAtMs,
      ]);
      await tx.db.query(
        `DELETE FROM pty_tunnels WHERE devbox_id = ? AND tunnel_key NOT IN
           (SELECT tunnel_key FROM pty_tunnels WHERE devbox_id = ? ORDER BY create_time_ms DESC, tunnel_key DESC LIMIT ${PER_BOX})`,
        [t.devboxId, t.devboxId],
      );
    });
    this.remember(t.key, t);
    return { ...t, authToken };
  }

  /** The tunnel of a request's key; undefined for a key that is no PTY tunnel's. */
  async byKey(key: string): Promise<PtyTunnel | undefined> {
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.atMs < CACHE_MS) return hit.tunnel;
    const { rows } = await this.store.db.query<PtyTunnelRow>('SELECT * FROM pty_tunnels WHERE tunnel_key = ?', [key]);
    const r = rows[0];
    const tunnel = r && { key: r.tunnel_key, devboxId: r.devbox_id, tokenSha256: r.token_sha256, createdAtMs: Number(r.create_time_ms) };
    this.remember(key, tunnel);
    return tunnel;
  }

  /** The box ended: its tunnels go. */
  async dropBox(devboxId: string): Promise<void> {
    await this.store.db.query('DELETE FROM pty_tunnels WHERE devbox_id = ?', [devboxId]);
    for (const [key, hit] of this.cache) if (hit.tunnel?.devboxId === devboxId) this.cache.delete(key);
  }

  private remember(key: string, tunnel: PtyTunnel | undefined): void {
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(key, { tunnel, atMs: Date.now() });
  }
}

function digest(token: string): string {
  return crypto.createHash('sha256').update(token).digest('hex');
}

/** The WebSocket subprotocol an attach answers: a browser accepts an upgrade only with one it offered. */
export const PTY_PROTOCOL = 'devboxd.pty';
/** A subprotocol that carries the token, base64url-encoded after this prefix (as Kubernetes carries bearer tokens). */
const TOKEN_PROTOCOL = 'devboxd.tunnel-auth.';

/** Whether a subprotocol offered at an upgrade carries a token, so it is never the one answered. */
export function isTokenProtocol(protocol: string): boolean {
  return protocol.startsWith(TOKEN_PROTOCOL);
}

/**
 * Whether the request carries the tunnel's token (digests compared in constant time):
 * `X-Runloop-Tunnel-Authorization: Bearer <token>`, or, when `subprotocol` is set (the attach upgrade) and
 * that header is absent, a `devboxd.tunnel-auth.<base64url(token)>` entry of `Sec-WebSocket-Protocol`,
 * since a browser's WebSocket can send no other header.
 */
export function carriesToken(req: http.IncomingMessage | http2.Http2ServerRequest, t: PtyTunnel, opts: { subprotocol?: boolean } = {}): boolean {
  const sent = req.headers['x-runloop-tunnel-authorization'];
  if (sent === undefined && opts.subprotocol) return matches(protocolToken(req), t);
  const m = typeof sent === 'string' ? /^Bearer (\S+)$/.exec(sent.trim()) : null;
  return matches(m?.[1], t);
}

function protocolToken(req: http.IncomingMessage | http2.Http2ServerRequest): string | undefined {
  const offered = req.headers['sec-websocket-protocol'];
  if (typeof offered !== 'string') return undefined;
  const entry = offered
    .split(',')
    .map((p) => p.trim())
    .find(isTokenProtocol);
  return entry && Buffer.from(entry.slice(TOKEN_PROTOCOL.length), 'base64url').toString('utf8');
}

function matches(token: string | undefined, t: PtyTunnel): boolean {
  if (!token) return false;
  const a = Buffer.from(digest(token), 'hex');
  const b = Buffer.from(t.tokenSha256, 'hex');
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}
