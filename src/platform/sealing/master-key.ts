import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ERRORS } from '../errors.js';

/** One AES-256 key and the id rows record it by (a hash of the key: it names the key, never reveals it). */
export interface MasterKey {
  id: string;
  key: Buffer;
}

/**
 * Where the Sealer's keys come from: the key new values are sealed under, and every key it may still
 * open (the current one and older ones during a rotation).
 */
export interface KeySource {
  current(): MasterKey;
  /** The key with this id, or undefined when this server does not hold it. */
  find(id: string): MasterKey | undefined;
  /** Where the keys come from, for messages (never the key itself). */
  readonly origin: string;
  /** The key this source held first (at the server's start): it does not change with a rotation. */
  readonly first: MasterKey;
}

export const KEY_BYTES = 32;
export const KEY_FILE = 'secret.key';

export class KeyError extends Error {}

export function keyId(key: Buffer): string {
  return createHash('sha256').update('devboxd secret key id\0').update(key).digest('hex').slice(0, 16);
}

/** A key from its base64 text (standard or url-safe alphabet); `what` names it in the error. */
export function parseKey(text: string, what: string): MasterKey {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) || key.length !== KEY_BYTES) {
    throw new KeyError(`${what} must be the base64 of ${KEY_BYTES} bytes (e.g. the output of \`openssl rand -base64 32\`)`);
  }
  return { id: keyId(key), key };
}

export function generateKey(): MasterKey {
  const key = randomBytes(KEY_BYTES);
  return { id: keyId(key), key };
}

/** Keys given once (DEVBOXD_SECRET_KEY and DEVBOXD_SECRET_KEY_PREVIOUS): a restart changes them. */
export class StaticKeys implements KeySource {
  private readonly byId: Map<string, MasterKey>;
  constructor(
    private readonly primary: MasterKey,
    previous: MasterKey[] = [],
    readonly origin = 'DEVBOXD_SECRET_KEY',
  ) {
    this.byId = new Map([...previous, primary].map((k) => [k.id, k]));
  }
  get first(): MasterKey {
    return this.primary;
  }
  current(): MasterKey {
    return this.primary;
  }
  find(id: string): MasterKey | undefined {
    return this.byId.get(id);
  }
}

/**
 * The key file `<data>/secret.key`: one base64 key per line, the first one current, the others retired but
 * still accepted for opening (they leave the file only through `secrets rotate-key --prune`, once no row uses
 * them). The file is re-read when it changes, so a server picks up a rotation run beside it without a
 * restart: before sealing and when it meets a key id it does not hold. A re-read that fails (file removed,
 * unreadable, garbled) keeps the keys last read for opening, but sealing is a 503 naming the file: a value
 * sealed under a key that may no longer be on disk would be lost at the next start.
 */
export class FileKeys implements KeySource {
  private keys: MasterKey[] = [];
  private stamp = '';
  readonly origin: string;
  readonly first: MasterKey;

  constructor(readonly file: string) {
    this.origin = file;
    this.reload(true);
    this.first = this.keys[0]!;
  }

  current(): MasterKey {
    try {
      this.reload(false);
    } catch (err) {
      throw ERRORS.unavailable(`the secret key file ${this.file} cannot be read (${reasonOf(err)}); no value is sealed until it can`);
    }
    return this.keys[0]!;
  }

  find(id: string): MasterKey | undefined {
    const known = this.keys.find((k) => k.id === id);
    if (known) return known;
    try {
      this.reload(false);
    } catch {
      return undefined; // the keys last read stay; the caller reports the key it lacks
    }
    return this.keys.find((k) => k.id === id);
  }

  private reload(force: boolean): void {
    const st = fs.statSync(this.file);
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    if (!force && stamp === this.stamp) return;
    this.keys = readKeyFile(this.file);
    this.stamp = stamp;
  }
}

function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code ? code : (err as Error).message;
}

/**
 * What is wrong with the key file's protection, if anything: it must be readable by its owner only, and
 * the owner must be the user the server runs as (a file restored as 0644, or someone else's, leaks or is
 * not ours). Empty when fine.
 */
export function keyFileProblems(file: string): string[] {
  const st = fs.statSync(file);
  const problems: string[] = [];
  if (st.mode & 0o077) problems.push(`its mode is ${(st.mode & 0o777).toString(8).padStart(4, '0')}: other users may read it (chmod 600 ${file})`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) problems.push(`it is owned by uid ${st.uid}, not by the server's uid ${uid}`);
  return problems;
}

export function readKeyFile(file: string): MasterKey[] {
  const lines = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (!lines.length) throw new KeyError(`${file} holds no key`);
  return lines.map((l, i) => parseKey(l, `line ${i + 1} of ${file}`));
}

/**
 * Writes the key file in one step (a new file renamed over the old, mode 0600, synced), so a reader sees
 * the old keys or the new ones, never half a file.
 */
export function writeKeyFile(file: string, keys: MasterKey[]): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeSynced(tmp, keys);
  fs.renameSync(tmp, file);
  fsyncDir(path.dirname(file));
}

/**
 * The key file, created with a fresh key when absent. The new file is written aside and linked into
 * place, which fails if another process got there first: then its key is the one everybody uses.
 */
export function ensureKeyFile(dataDir: string): string {
  const file = path.join(dataDir, KEY_FILE);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeSynced(tmp, [generateKey()]);
  try {
    fs.linkSync(tmp, file);
    fsyncDir(dataDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return file;
}

function writeSynced(file: string, keys: MasterKey[]): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeSync(fd, keys.map((k) => `${k.key.toString('base64')}\n`).join(''));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The server's key source: DEVBOXD_SECRET_KEY (with any previous keys) when set, else the key file, whose
 * protection is checked at start (`warn` gets each problem; the server still starts, the operator decides).
 */
export function openKeySource(opts: { dataDir: string; secretKey?: string; previousKeys?: string[]; warn?: (message: string) => void }): KeySource {
  if (opts.secretKey) {
    const previous = (opts.previousKeys ?? []).map((k, i) => parseKey(k, `key ${i + 1} of DEVBOXD_SECRET_KEY_PREVIOUS`));
    return new StaticKeys(parseKey(opts.secretKey, 'DEVBOXD_SECRET_KEY'), previous);
  }
  const file = ensureKeyFile(opts.dataDir);
  for (const problem of keyFileProblems(file)) opts.warn?.(`the secret key file ${file} is not protected: ${problem}`);
  return new FileKeys(file);
}
