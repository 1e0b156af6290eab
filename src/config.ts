import path from 'node:path';

/** Every setting devboxd reads, parsed once at start and passed in; nothing reads process.env elsewhere. */
export interface Config {
  /** DEVBOXD_HOST: address to listen on. Loopback by default: devboxd is a local service unless told otherwise. */
  host: string;
  /** DEVBOXD_PORT: one port for HTTP/1.1 and h2c. 0 picks a free port (tests). */
  port: number;
  /** DEVBOXD_DATA_DIR: database, images, layers, box disks, execution output. */
  dataDir: string;
  /** DEVBOXD_IMAGE_DIR: cache of built base images; shared between data dirs to build once per machine. */
  imageDir: string;
  /** DEVBOXD_ADMIN_KEY: a standard key created on the default account at start (idempotent). */
  adminKey: string | undefined;
  /** DEVBOXD_LOG_LEVEL: pino level (fatal, error, warn, info, debug, trace, silent). */
  logLevel: string;
  /** DEVBOXD_BODY_LIMIT: largest JSON body accepted, bytes; larger bodies get 413. */
  bodyLimit: number;
  /** DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX: commands one devbox runs at once; past it `execute` gets 429. */
  maxExecutionsPerDevbox: number;
  /** DEVBOXD_MAX_EXECUTIONS: commands all devboxes run at once (one host relay each); past it a command ends with 125. */
  maxExecutions: number;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {}

function int(name: string, raw: string | undefined, def: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = path.resolve(env.DEVBOXD_DATA_DIR || './data');
  const logLevel = env.DEVBOXD_LOG_LEVEL || 'info';
  if (!LEVELS.includes(logLevel)) {
    throw new ConfigError(`DEVBOXD_LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const adminKey = env.DEVBOXD_ADMIN_KEY || undefined;
  if (adminKey !== undefined && !/^ak_[A-Za-z0-9_-]{16,}$/.test(adminKey)) {
    throw new ConfigError('DEVBOXD_ADMIN_KEY must look like ak_ followed by at least 16 letters, digits, _ or -');
  }
  return Object.freeze({
    host: env.DEVBOXD_HOST || '127.0.0.1',
    port: int('DEVBOXD_PORT', env.DEVBOXD_PORT, 4000, 0, 65535),
    dataDir,
    imageDir: path.resolve(env.DEVBOXD_IMAGE_DIR || path.join(dataDir, 'images')),
    adminKey,
    logLevel,
    bodyLimit: int('DEVBOXD_BODY_LIMIT', env.DEVBOXD_BODY_LIMIT, 10 * 1024 * 1024, 1024, 1024 ** 3),
    maxExecutionsPerDevbox: int('DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX', env.DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX, 256, 1, 65536),
    maxExecutions: int('DEVBOXD_MAX_EXECUTIONS', env.DEVBOXD_MAX_EXECUTIONS, 4096, 1, 1 << 20),
  });
}
