/**
 * What a box's request bodies may cost the server: every body byte a handler reads (the gateway forwarding an
 * upload, the MCP hub reading a message) is drawn from its box's budget, a token bucket refilled at
 * `bytesPerSecond` up to `burstBytes`. A box past its budget is slowed, not failed: the reads of its
 * connections stop until the bucket holds bytes again, so the kernel's socket buffers hold the box back
 * (uploads still stream, at the box's rate) and the server's CPU goes to every other box.
 */
import type { IncomingMessage } from 'node:http';

export interface BodyBudgetOptions {
  /** Body bytes one box may send per second, over every connection (default 32 MiB). */
  bytesPerSecond?: number;
  /** What a box may send at once above the rate (default one second's worth). */
  burstBytes?: number;
}

export const DEFAULT_BODY_BYTES_PER_SECOND = 32 * 1024 * 1024;

/** One box's bucket. */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(n: number): void {
    this.refill();
    this.tokens -= n;
  }

  /** Takes `n` when the bucket holds them; false (and nothing taken) when it does not. */
  tryTake(n: number): boolean {
    this.refill();
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Milliseconds until the box may send again; 0 when it may now. */
  wait(): number {
    this.refill();
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.rate) * 1000);
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
  }
}

export class BodyBudget {
  private readonly rate: number;
  private readonly burst: number;
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(opts: BodyBudgetOptions = {}) {
    this.rate = opts.bytesPerSecond ?? DEFAULT_BODY_BYTES_PER_SECOND;
    this.burst = opts.burstBytes ?? this.rate;
  }

  /** Forgets a box (its link went). */
  drop(boxId: string): void {
    this.buckets.delete(boxId);
  }

  /**
   * Meters `req`'s body against its box's bucket. The HTTP parser hands body bytes to `req.push` (a false
   * answer stops the socket's reads) and `req._read` starts them again once the handler wants more: a
   * push past the budget answers false, and the next `_read` waits until the bucket refills.
   */
  meter(req: IncomingMessage, boxId: string): void {
    let bucket = this.buckets.get(boxId);
    if (!bucket) this.buckets.set(boxId, (bucket = new TokenBucket(this.rate, this.burst)));
    const b = bucket;
    const stream = req as unknown as { push: (chunk: unknown, enc?: BufferEncoding) => boolean; _read: (n: number) => void };
    const push = stream.push.bind(req);
    const read = stream._read.bind(req);
    let timer: NodeJS.Timeout | undefined;
    stream.push = (chunk, enc) => {
      if (chunk !== null && chunk !== undefined) b.take((chunk as Buffer).length);
      const more = push(chunk, enc);
      return more && b.wait() === 0;
    };
    stream._read = (n) => {
      const ms = b.wait();
      if (ms === 0) return read(n);
      timer ??= setTimeout(() => {
        timer = undefined;
        if (!req.destroyed) read(n);
      }, ms);
    };
    req.once('close', () => clearTimeout(timer));
  }
}
