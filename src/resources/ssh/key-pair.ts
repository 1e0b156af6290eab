import ssh2 from 'ssh2';

/** An ed25519 public key blob: string "ssh-ed25519" (4 + 11 bytes), string key (4 + 32). */
const ED25519_BLOB_BYTES = 51;
const TRIES = 16;

/**
 * A new ed25519 pair in OpenSSH format (private key PEM-armoured, public key as an authorized_keys line).
 * ssh2's generator drops a leading zero byte of the public key (it strips the DER bit string's
 * unused-bits byte with a loop that also eats a zero of the key), so one pair in 256 comes out malformed
 * and neither ssh2 nor OpenSSH reads it: such a pair is checked and made again.
 */
export function newKeyPair(comment: string): { private: string; public: string } {
  for (let i = 0; i < TRIES; i++) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment });
    const priv = ssh2.utils.parseKey(pair.private);
    const pub = ssh2.utils.parseKey(pair.public);
    const ok = (k: typeof priv) => !(k instanceof Error) && !Array.isArray(k) && k.getPublicSSH().length === ED25519_BLOB_BYTES;
    if (ok(priv) && ok(pub)) return pair;
  }
  throw new Error(`no well-formed ed25519 pair in ${TRIES} tries`);
}
