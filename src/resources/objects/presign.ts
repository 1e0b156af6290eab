import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** What a presigned URL lets its bearer do: PUT the bytes of an object being uploaded, or GET them. */
export type PresignedOp = 'upload' | 'download';

/** The path presigned URLs live under (served by devboxd itself, from the blob store, without an API key). */
export const PRESIGNED_PREFIX = '/presigned/objects';

/**
 * Signs and checks presigned object URLs: `<base>/presigned/objects/<id>?op=…&expires=<unix s>&signature=…`,
 * where the signature is HMAC-SHA256 over the operation, the object id and the expiry, under a key derived
 * (HKDF) from the master key this server held first (DEVBOXD_SECRET_KEY or `<data>/secret.key`). Servers
 * sharing the master key honour each other's URLs; a URL altered in any part, or past its expiry, is refused.
 */
export class Presigner {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'devboxd presigned object url', 32));
  }

  url(base: string, op: PresignedOp, objectId: string, expiresAtSec: number): string {
    const q = new URLSearchParams({ op, expires: String(expiresAtSec), signature: this.sign(op, objectId, expiresAtSec) });
    return `${base}${PRESIGNED_PREFIX}/${encodeURIComponent(objectId)}?${q.toString()}`;
  }

  /** Why the URL's query does not authorise `op` on the object now, or null when it does. */
  refusal(op: PresignedOp, objectId: string, q: { op?: string; expires?: string; signature?: string }, nowMs = Date.now()): string | null {
    if (q.op !== op || !q.expires || !q.signature || !/^\d{1,12}$/.test(q.expires)) return 'the URL is not a presigned URL for this request';
    const expires = Number(q.expires);
    const expected = Buffer.from(this.sign(op, objectId, expires));
    const given = Buffer.from(q.signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'the URL signature does not match: the URL was altered';
    if (expires * 1000 <= nowMs) return `the URL expired at ${new Date(expires * 1000).toISOString()}`;
    return null;
  }

  private sign(op: PresignedOp, objectId: string, expiresAtSec: number): string {
    return createHmac('sha256', this.key).update(`${op}\n${objectId}\n${expiresAtSec}`).digest('base64url');
  }
}
