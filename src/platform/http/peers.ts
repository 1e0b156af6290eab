import crypto from 'node:crypto';

/**
 * What API servers of one cluster say to each other on the API port. A server that forwards a request to the
 * API server of another node adds `x-devboxd-peer`: an HMAC of the request's method and path under a key
 * derived from the cluster token (the token itself never travels on the API port, which may be cleartext),
 * with its node name and the time. The target serves such a request itself and never forwards it again, so two
 * servers that disagree for a moment about where a box is cannot send a request back and forth.
 */
export const PEER_HEADER = 'x-devboxd-peer';

/** How far the two servers' clocks and the hop may put the signature's time from the target's. */
const SKEW_MS = 300_000;

/**
 * Thrown by a handler when the request belongs on another node (a create placed there, a resume that moves a box
 * there, a read of a box running there): the app forwards it to that node's API server, its body replayed, and
 * answers with what that says. `here` answers it on this server instead when that node cannot be reached (a
 * read of what the database holds); without it, such a request is a 503 naming the node.
 */
export class ElsewhereError extends Error {
  constructor(
    readonly node: string,
    readonly here?: () => Promise<unknown>,
  ) {
    super(`the request belongs on node ${node}`);
  }
}

export class PeerKey {
  private readonly key: Buffer;

  constructor(
    token: string,
    /** This server's node: named in what it signs, for the target's logs. */
    readonly node: string,
  ) {
    this.key = crypto.createHmac('sha256', token).update('devboxd api peer v1').digest();
  }

  /** The header value for a request `method path` (path with its query, as the target will see it). */
  sign(method: string, path: string, nowMs = Date.now()): string {
    return `v1 ${nowMs} ${this.node} ${this.mac(nowMs, this.node, method, path)}`;
  }

  /** The signing node when `value` signs `method path` under this cluster's key within the skew, else null. */
  verify(value: string, method: string, path: string, nowMs = Date.now()): string | null {
    const m = /^v1 (\d{1,15}) (\S{1,128}) ([A-Za-z0-9_-]{43})$/.exec(value);
    if (!m || Math.abs(nowMs - Number(m[1])) > SKEW_MS) return null;
    const want = Buffer.from(this.mac(Number(m[1]), m[2]!, method, path));
    const got = Buffer.from(m[3]!);
    return got.length === want.length && crypto.timingSafeEqual(got, want) ? m[2]! : null;
  }

  private mac(ts: number, node: string, method: string, path: string): string {
    return crypto.createHmac('sha256', this.key).update(`${ts}\n${node}\n${method.toUpperCase()}\n${path}`).digest('base64url');
  }
}

const fromPeers = new WeakSet<object>();

/** Marks a raw request whose peer header verified (the routing front does, before the API sees it). */
export function markFromPeer(req: object): void {
  fromPeers.add(req);
}

/** Whether another node's API server forwarded this raw request: it is served here, never placed again. */
export function fromPeer(req: object): boolean {
  return fromPeers.has(req);
}
