import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Resource ids carry a type prefix (`dbx_`, `snp_`...) like Runloop's, then a time-ordered part so ids
 * sort by creation (cursor pagination orders by id), then randomness so they cannot be guessed.
 */
export function newId(prefix: string): string {
  const time = Date.now().toString(36).padStart(9, '0');
  const bytes = randomBytes(12);
  let rand = '';
  for (const b of bytes) rand += ALPHABET[b % 36];
  return `${prefix}_${time}${rand}`;
}

/** A secret token: 32 url-safe random characters after the prefix. */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('base64url')}`;
}
