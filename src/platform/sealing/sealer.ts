import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { KeySource } from './master-key.js';

const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed text that does not open: wrong key, wrong AAD, altered, or a key this server does not hold. */
export class SealError extends Error {}

/**
 * The authenticated cipher under the master key: AES-256-GCM with a fresh 96-bit nonce per value. The AAD
 * binds a sealed text to where it belongs (a secret's account and id, a token's owner), so a sealed text
 * copied elsewhere does not open. The result names the key it was sealed under:
 * `v1.<key id>.<base64url(nonce | ciphertext | tag)>`.
 */
export class Sealer {
  constructor(private readonly keys: KeySource) {}

  seal(plain: string, aad: string): string {
    const { id, key } = this.keys.current();
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([nonce, cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${id}.${body.toString('base64url')}`;
  }

  open(sealed: string, aad: string): string {
    const { keyId, body } = parse(sealed);
    const found = this.keys.find(keyId);
    if (!found) throw new SealError(`sealed under key ${keyId}, which this server does not hold (its keys come from ${this.keys.origin})`);
    if (body.length < NONCE_BYTES + TAG_BYTES) throw new SealError('sealed text too short');
    const decipher = createDecipheriv('aes-256-gcm', found.key, body.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealError('sealed text does not open: altered, or not sealed for this place');
    }
  }

  /**
   * A keyed digest of `data` (HMAC-SHA256 under a key derived from the first master key this server held):
   * lets the database compare request bodies that may hold secret values (x-request-id claims) without
   * holding anything a weak value could be guessed back from. Derived once, so a rotation beside a running
   * server changes nothing (a retry in flight still matches) and no request touches the key file for it.
   * Servers started with the same DEVBOXD_SECRET_KEY agree on it; a restart under another key changes it.
   */
  fingerprint(data: string): string {
    this.fingerprintKey ??= Buffer.from(hkdfSync('sha256', this.keys.first.key, Buffer.alloc(0), 'devboxd request fingerprint', 32));
    return createHmac('sha256', this.fingerprintKey).update(data).digest('hex');
  }

  private fingerprintKey: Buffer | undefined;

  /** Whether this server holds the key of that id. */
  holds(keyId: string): boolean {
    return this.keys.find(keyId) !== undefined;
  }

  /** The id of the key new values are sealed under. */
  currentKeyId(): string {
    return this.keys.current().id;
  }

  /** The key id a sealed text names. */
  static keyIdOf(sealed: string): string {
    return parse(sealed).keyId;
  }
}

function parse(sealed: string): { keyId: string; body: Buffer } {
  const parts = sealed.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION || !parts[1]) throw new SealError('not a sealed text');
  return { keyId: parts[1], body: Buffer.from(parts[2]!, 'base64url') };
}
