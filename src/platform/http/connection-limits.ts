import http2 from 'node:http2';
import net from 'node:net';

/** What one client may hold of the listener before its requests are in, and how much HTTP/2 churn it may cause. */
export interface ConnectionLimits {
  /** A connection's first request headers (either protocol) must be complete within this long; later HTTP/1.1 requests' too. */
  headersTimeoutMs: number;
  /** Connections not yet past their first headers, per source address (IPv6: per /64); more are closed at once. */
  pendingPerAddress: number;
  /** Connections not yet past their first headers, in all. */
  pendingTotal: number;
  /** Streams one HTTP/2 session may see reset per 10 s; past it the session gets GOAWAY ENHANCE_YOUR_CALM and is closed. */
  h2ResetsPer10s: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = Object.freeze({
  headersTimeoutMs: 15_000,
  pendingPerAddress: 128,
  pendingTotal: 1024,
  // nghttp2's own limit (a burst of 1000, then 33/s) ends a session with INTERNAL_ERROR and leaves Node's
  // socket open (CLOSE-WAIT); 200 per 10 s is stricter in every window, so this one always acts first.
  h2ResetsPer10s: 200,
});

const RESET_WINDOW_MS = 10_000;

/** The bucket a source address counts in: IPv4 (mapped or not) by address, IPv6 by its /64 (what one host gets). */
export function addressKey(address: string | undefined): string {
  if (!address) return '';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!address.includes(':')) return address;
  const full = expandIpv6(address);
  return full ? `${full.slice(0, 4).join(':')}::/64` : address;
}

function expandIpv6(address: string): string[] | null {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return null;
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''));
}

/**
 * Connections not yet past their headers: each is admitted under the caps (or refused), holds a deadline, and is
 * released once its first request's headers are in (or it is handed elsewhere, or it closes). A client that
 * opens connections and never completes a request holds at most `pendingPerAddress` of them, each for at
 * most `headersTimeoutMs`.
 */
export class PendingConnections {
  private readonly perAddress = new Map<string, number>();
  private total = 0;

  constructor(private readonly limits: ConnectionLimits) {}

  /** Admits a new socket (false: over a cap, destroy it); `onTimeout` runs if it is still pending at the deadline. */
  admit(socket: net.Socket, onTimeout: () => void): PendingConnection | null {
    const key = addressKey(socket.remoteAddress);
    const n = this.perAddress.get(key) ?? 0;
    if (n >= this.limits.pendingPerAddress || this.total >= this.limits.pendingTotal) return null;
    this.perAddress.set(key, n + 1);
    this.total++;
    const timer = setTimeout(onTimeout, this.limits.headersTimeoutMs);
    timer.unref();
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        clearTimeout(timer);
        this.total--;
        const left = (this.perAddress.get(key) ?? 1) - 1;
        if (left === 0) this.perAddress.delete(key);
        else this.perAddress.set(key, left);
      },
    };
  }

  /** Connections pending now (tests, metrics). */
  get size(): number {
    return this.total;
  }
}

export interface PendingConnection {
  /** Idempotent: its headers are in, it went elsewhere, or it closed. */
  release(): void;
}

/**
 * Bounds an HTTP/2 session's stream resets (the "rapid reset" of CVE-2023-44487: open, cancel, repeat, each
 * costing the server a request it starts for nobody): past `h2ResetsPer10s` in a 10 s window the session gets
 * GOAWAY ENHANCE_YOUR_CALM and is destroyed, its socket with it. A session left without streams for `idleMs`
 * is closed, whatever ended its use (a session nghttp2 itself gave up on emits nothing Node acts on).
 */
export function guardSession(session: http2.ServerHttp2Session, limits: ConnectionLimits, idleMs: number): void {
  let windowStart = 0;
  let resets = 0;
  let open = 0;
  session.on('stream', (stream) => {
    open++;
    stream.once('close', () => {
      open--;
      if (!stream.rstCode || session.destroyed) return;
      const now = Date.now();
      if (now - windowStart >= RESET_WINDOW_MS) {
        windowStart = now;
        resets = 0;
      }
      // Not from within this callback: nghttp2 is inside its stream-close handling, and destroying the session
      // there spins the process (CPU bound, memory growing) instead of ending it.
      if (++resets === limits.h2ResetsPer10s + 1)
        setImmediate(() => session.destroy(new Error('too many stream resets'), http2.constants.NGHTTP2_ENHANCE_YOUR_CALM));
    });
  });
  // close(), not destroy(): a GOAWAY first, so a client about to send on the session opens a new one instead
  // of losing the request to a socket that vanished.
  session.setTimeout(idleMs, () => {
    if (open === 0) session.close();
  });
}
