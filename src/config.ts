import os from 'node:os';
import path from 'node:path';
import { loadNetworkConfig, type NetworkConfig } from './network-config.js';
import { loadSshConfig, type SshConfig } from './ssh-config.js';
import { loadBlobConfig, type BlobConfig } from './platform/blob/config.js';
import { type OutboundAllow, parseOutboundAllow } from './platform/outbound/index.js';
import type { ConnectionLimits } from './platform/http/connection-limits.js';
import { ConfigError, intSetting } from './platform/config-error.js';
import { loadRolesConfig, type RolesConfig } from './roles/config.js';

/**
 * The host-wide settings, parsed once at start and passed in. Each resource module parses its own settings
 * (its `config`, from the same environment: `env` here); nothing else reads process.env.
 */
export interface Config {
  /** DEVBOXD_ROLE and how the API server and node agents find and trust each other (roles/config.ts). */
  roles: RolesConfig;
  /** DEVBOXD_HOST_DATA_DIR: where the operator finds the API server's data dir (its own view differs under `all`). */
  shownDataDir: string;
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
  /** DEVBOXD_BODY_TIMEOUT_MS: a JSON body must arrive within this long after the headers (408 otherwise). */
  bodyTimeoutMs: number;
  /**
   * Connections before their headers are in, and HTTP/2 resets: DEVBOXD_HEADERS_TIMEOUT_MS,
   * DEVBOXD_PENDING_CONNECTIONS_PER_ADDRESS, DEVBOXD_PENDING_CONNECTIONS, DEVBOXD_H2_MAX_RESETS.
   */
  connections: ConnectionLimits;
  /** DEVBOXD_MAX_CPU_CORES: the most CPU one devbox may ask for; default the host's cores (raise to overcommit). */
  maxCpuCores: number;
  /** DEVBOXD_MAX_MEMORY_GB: the most memory (GiB) one devbox may ask for; default the host's memory. */
  maxMemoryGiB: number;
  /** DEVBOXD_DATABASE_URL: postgres://… selects PostgreSQL (shared by several servers); unset, SQLite in the data dir. */
  databaseUrl: string | undefined;
  /** DEVBOXD_NODE_NAME: this server's name in a shared database; it reconciles and supervises only its own boxes. */
  nodeName: string;
  /** DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX: commands one devbox runs at once; past it `execute` gets 429. */
  maxExecutionsPerDevbox: number;
  /** DEVBOXD_MAX_EXECUTIONS: commands all devboxes run at once (one host relay each); past it a command ends with 125. */
  maxExecutions: number;
  /** DEVBOXD_SECRET_KEY: base64 of the 32-byte master key secrets are sealed under; unset, `<data>/secret.key`. */
  secretKey: string | undefined;
  /** DEVBOXD_SECRET_KEY_PREVIOUS: comma-separated older master keys, still opened (a rotation in progress). */
  secretKeyPrevious: string[];
  /**
   * DEVBOXD_BOX_SERVICES_PORT: the port on 127.0.0.1 inside every box where the box services (MCP hub, agent
   * gateway) answer. Below 1024 by default: box root cannot bind such a port, so no tenant can take it.
   */
  boxServicesPort: number;
  /** Box networking and egress (DEVBOXD_NETWORK, DEVBOXD_BOX_SUBNET, DEVBOXD_EGRESS_DENY, ...); see network-config.ts. */
  network: NetworkConfig;
  /**
   * DEVBOXD_TUNNEL_DOMAIN: tunnels answer host names `{port}-{key}.tunnel.<this>` (what the SDK builds from an
   * API at `api.<this>`); null: any `{port}-{key}.tunnel.*` host name.
   */
  tunnelDomain: string | null;
  /** The SSH front (DEVBOXD_SSH_PORT, DEVBOXD_SSH_PLAIN_PORT, DEVBOXD_SSH_DOMAIN, ...); see ssh-config.ts. */
  ssh: SshConfig;
  /** Where blobs live: DEVBOXD_BLOB_BACKEND (fs, s3) and the DEVBOXD_S3_* settings; see platform/blob/config.ts. */
  blob: BlobConfig;
  /** Registries images are pulled from (DEVBOXD_REGISTRY_*); see src/runtime/oci/. */
  registry: RegistrySettings;
  /**
   * DEVBOXD_OUTBOUND_ALLOW: comma-separated host names and CIDRs the server may connect to for a tenant (gateway,
   * MCP, registries, git) although they are loopback, link-local, private, shared, its own or the box subnet. Empty.
   */
  outboundAllow: OutboundAllow;
  /** The environment these came from: each resource module parses its own settings from it at start. */
  env: Readonly<Record<string, string | undefined>>;
}

export interface RegistrySettings {
  /** DEVBOXD_REGISTRY_DEFAULT: the registry of references that name none (`python:3.12`); default Docker Hub. */
  defaultRegistry: string;
  /** DEVBOXD_REGISTRY_INSECURE: comma-separated `host` or `host:port` reached over plain http. */
  insecure: string[];
  /**
   * DEVBOXD_REGISTRY_ALLOW: comma-separated `host` or `host:port` that blueprint FROM and service images may be
   * pulled from, beside the default and the insecure registries; empty: any https registry.
   */
  allow: string[];
  /** DEVBOXD_REGISTRY_MAX_LAYER_BYTES: largest layer blob (compressed) pulled. */
  maxLayerBytes: number;
  /** DEVBOXD_REGISTRY_MAX_UNPACKED_BYTES: largest layer once decompressed. */
  maxUnpackedBytes: number;
}

const REGISTRY_HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?$/;

function loadRegistry(env: NodeJS.ProcessEnv): RegistrySettings {
  const defaultRegistry = (env.DEVBOXD_REGISTRY_DEFAULT || 'docker.io').trim();
  if (!REGISTRY_HOST.test(defaultRegistry)) throw new ConfigError(`DEVBOXD_REGISTRY_DEFAULT must be host or host:port, got "${defaultRegistry}"`);
  const hosts = (name: string) => {
    const list = (env[name] ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean);
    for (const h of list) if (!REGISTRY_HOST.test(h)) throw new ConfigError(`${name} entries must be host or host:port, got "${h}"`);
    return list;
  };
  return {
    defaultRegistry,
    insecure: hosts('DEVBOXD_REGISTRY_INSECURE'),
    allow: hosts('DEVBOXD_REGISTRY_ALLOW'),
    maxLayerBytes: int('DEVBOXD_REGISTRY_MAX_LAYER_BYTES', env.DEVBOXD_REGISTRY_MAX_LAYER_BYTES, 8 * 1024 * MiB, MiB, 2 ** 50),
    maxUnpackedBytes: int('DEVBOXD_REGISTRY_MAX_UNPACKED_BYTES', env.DEVBOXD_REGISTRY_MAX_UNPACKED_BYTES, 32 * 1024 * MiB, MiB, 2 ** 50),
  };
}

function outboundAllow(raw: string): OutboundAllow {
  try {
    return parseOutboundAllow(raw);
  } catch (err) {
    throw new ConfigError(`DEVBOXD_OUTBOUND_ALLOW must be comma-separated host names and CIDRs: ${(err as Error).message}`);
  }
}

const MiB = 1024 * 1024;
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export { ConfigError };

const int = intSetting;

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
  const databaseUrl = env.DEVBOXD_DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DEVBOXD_DATABASE_URL must start with postgres:// or postgresql://');
  }
  const nodeName = env.DEVBOXD_NODE_NAME || os.hostname();
  if (!/^[A-Za-z0-9._-]{1,253}$/.test(nodeName)) {
    throw new ConfigError(`DEVBOXD_NODE_NAME must be 1 to 253 letters, digits, ".", "_" or "-", got "${nodeName}"`);
  }
  const secretKey = env.DEVBOXD_SECRET_KEY || undefined;
  const tunnelDomain = (env.DEVBOXD_TUNNEL_DOMAIN || '').toLowerCase().replace(/\.$/, '') || null;
  if (tunnelDomain && !/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/.test(tunnelDomain)) {
    throw new ConfigError(`DEVBOXD_TUNNEL_DOMAIN must be a DNS name (example.com), got "${env.DEVBOXD_TUNNEL_DOMAIN}"`);
  }
  const secretKeyPrevious = (env.DEVBOXD_SECRET_KEY_PREVIOUS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  for (const [name, k] of [...(secretKey ? [['DEVBOXD_SECRET_KEY', secretKey]] : []), ...secretKeyPrevious.map((k) => ['DEVBOXD_SECRET_KEY_PREVIOUS', k])]) {
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(k!) || Buffer.from(k!, 'base64').length !== 32) {
      throw new ConfigError(`${name} must be the base64 of 32 bytes (e.g. the output of \`openssl rand -base64 32\`)`);
    }
  }
  return Object.freeze({
    roles: loadRolesConfig(env, dataDir),
    shownDataDir: env.DEVBOXD_HOST_DATA_DIR || dataDir,
    host: env.DEVBOXD_HOST || '127.0.0.1',
    port: int('DEVBOXD_PORT', env.DEVBOXD_PORT, 4000, 0, 65535),
    dataDir,
    imageDir: path.resolve(env.DEVBOXD_IMAGE_DIR || path.join(dataDir, 'images')),
    adminKey,
    logLevel,
    bodyLimit: int('DEVBOXD_BODY_LIMIT', env.DEVBOXD_BODY_LIMIT, 10 * 1024 * 1024, 1024, 1024 ** 3),
    bodyTimeoutMs: int('DEVBOXD_BODY_TIMEOUT_MS', env.DEVBOXD_BODY_TIMEOUT_MS, 30_000, 100, 3_600_000),
    connections: Object.freeze({
      headersTimeoutMs: int('DEVBOXD_HEADERS_TIMEOUT_MS', env.DEVBOXD_HEADERS_TIMEOUT_MS, 15_000, 100, 600_000),
      pendingPerAddress: int('DEVBOXD_PENDING_CONNECTIONS_PER_ADDRESS', env.DEVBOXD_PENDING_CONNECTIONS_PER_ADDRESS, 128, 1, 1_000_000),
      pendingTotal: int('DEVBOXD_PENDING_CONNECTIONS', env.DEVBOXD_PENDING_CONNECTIONS, 1024, 1, 1_000_000),
      // Past 1000 nghttp2's own limit would act first (and leave its socket open): capped below it.
      h2ResetsPer10s: int('DEVBOXD_H2_MAX_RESETS', env.DEVBOXD_H2_MAX_RESETS, 200, 1, 900),
    }),
    maxCpuCores: int('DEVBOXD_MAX_CPU_CORES', env.DEVBOXD_MAX_CPU_CORES, os.availableParallelism(), 1, 1024),
    maxMemoryGiB: int('DEVBOXD_MAX_MEMORY_GB', env.DEVBOXD_MAX_MEMORY_GB, Math.floor(os.totalmem() / 1024 ** 3), 1, 65536),
    databaseUrl,
    nodeName,
    maxExecutionsPerDevbox: int('DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX', env.DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX, 256, 1, 65536),
    maxExecutions: int('DEVBOXD_MAX_EXECUTIONS', env.DEVBOXD_MAX_EXECUTIONS, 4096, 1, 1 << 20),
    secretKey,
    secretKeyPrevious,
    boxServicesPort: int('DEVBOXD_BOX_SERVICES_PORT', env.DEVBOXD_BOX_SERVICES_PORT, 1023, 1, 65535),
    network: loadNetworkConfig(env, (name, def, min, max) => int(name, env[name], def, min, max)),
    tunnelDomain,
    registry: loadRegistry(env),
    outboundAllow: outboundAllow(env.DEVBOXD_OUTBOUND_ALLOW ?? ''),
    ssh: loadSshConfig(env, env.DEVBOXD_HOST || '127.0.0.1', (name, def, min, max) => int(name, env[name], def, min, max)),
    blob: loadBlobConfig(env),
    env: Object.freeze({ ...env }),
  });
}
