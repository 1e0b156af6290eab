import { ConfigError } from '../../platform/config-error.js';

/** Storage object settings (part of Config, parsed once at start). */
export interface ObjectConfig {
  /** DEVBOXD_OBJECT_MAX_BYTES: largest object an upload may store; the PUT past it gets 413 and nothing is kept. */
  maxBytes: number;
  /**
   * DEVBOXD_PUBLIC_URL: the base of presigned URLs (`https://api.example.com`, a path prefix allowed); unset,
   * the scheme (X-Forwarded-Proto, else http) and host of the request that asked for the URL.
   */
  publicUrl: string | null;
  /** DEVBOXD_OBJECT_ACCOUNT_MAX_OBJECTS: most objects an account holds at once (a create past it gets 403). */
  accountMaxObjects: number;
  /** DEVBOXD_OBJECT_ACCOUNT_MAX_BYTES: most bytes an account's objects hold together (a PUT past it gets 413). */
  accountMaxBytes: number;
  /** DEVBOXD_OBJECT_UPLOADS_MAX: uploads (PUTs) in flight on this server at once; one more gets 429 with Retry-After. */
  uploadsMax: number;
  /** DEVBOXD_OBJECT_UPLOAD_IDLE_MS: an upload whose body sends nothing this long is cut off (400), its bytes dropped. */
  uploadIdleMs: number;
  /** DEVBOXD_OBJECT_MOUNT_MAX_BYTES: most bytes an archive mounted into a box may unpack to (besides the box's disk). */
  mountMaxBytes: number;
  /** DEVBOXD_OBJECT_MOUNT_MAX_ENTRIES: most files and directories an archive mounted into a box may hold. */
  mountMaxEntries: number;
  /**
   * DEVBOXD_OBJECT_MOUNT_TIMEOUT (seconds): how long placing a box's object mounts may take in all; past it
   * the placing process is killed and the box fails saying so (a stalled unpack never holds it initializing).
   */
  mountTimeoutMs: number;
}

const GiB = 1024 ** 3;

export function loadObjectConfig(env: NodeJS.ProcessEnv, int: (name: string, def: number, min: number, max: number) => number): ObjectConfig {
  const raw = (env.DEVBOXD_PUBLIC_URL ?? '').trim().replace(/\/+$/, '');
  let publicUrl: string | null = null;
  if (raw) {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ConfigError(`DEVBOXD_PUBLIC_URL must be an http(s) URL, got "${raw}"`);
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || u.search || u.hash) {
      throw new ConfigError(`DEVBOXD_PUBLIC_URL must be an http(s) URL without credentials, query or fragment, got "${raw}"`);
    }
    publicUrl = raw;
  }
  return {
    maxBytes: int('DEVBOXD_OBJECT_MAX_BYTES', 16 * GiB, 1, 2 ** 50),
    publicUrl,
    accountMaxObjects: int('DEVBOXD_OBJECT_ACCOUNT_MAX_OBJECTS', 10_000, 1, 100_000_000),
    accountMaxBytes: int('DEVBOXD_OBJECT_ACCOUNT_MAX_BYTES', 64 * GiB, 1, 2 ** 50),
    uploadsMax: int('DEVBOXD_OBJECT_UPLOADS_MAX', 64, 1, 100_000),
    uploadIdleMs: int('DEVBOXD_OBJECT_UPLOAD_IDLE_MS', 60_000, 100, 3_600_000),
    mountMaxBytes: int('DEVBOXD_OBJECT_MOUNT_MAX_BYTES', 8 * GiB, 1024, 2 ** 50),
    mountMaxEntries: int('DEVBOXD_OBJECT_MOUNT_MAX_ENTRIES', 100_000, 1, 100_000_000),
    mountTimeoutMs: int('DEVBOXD_OBJECT_MOUNT_TIMEOUT', 900, 1, 86_400) * 1000,
  };
}
