import { ConfigError } from '../config-error.js';

/** Where blobs live (part of Config, parsed once at start). */
export type BlobConfig = { backend: 'fs' } | ({ backend: 's3' } & S3Config);

export interface S3Config {
  /** DEVBOXD_S3_ENDPOINT: `http(s)://host[:port]` of an S3-protocol server; unset, AWS S3 of the region. */
  endpoint: string | undefined;
  /** DEVBOXD_S3_BUCKET: an existing bucket (devboxd never creates one). */
  bucket: string;
  /** DEVBOXD_S3_REGION: the region requests are signed for. */
  region: string;
  /** DEVBOXD_S3_ACCESS_KEY_ID / DEVBOXD_S3_SECRET_ACCESS_KEY; unset, the AWS SDK's default credential chain. */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** DEVBOXD_S3_PREFIX: every key is stored under it (`devboxd/`), so one bucket can hold several servers' blobs. */
  prefix: string;
  /** DEVBOXD_S3_FORCE_PATH_STYLE: `http://host/bucket/key` rather than `http://bucket.host/key`. */
  forcePathStyle: boolean;
  /** DEVBOXD_S3_READS: reads streaming at once (each holds a socket of the read pool while its reader takes bytes). */
  reads: number;
  /** DEVBOXD_S3_READ_QUEUE: reads that wait for one of those (up to READ_WAIT_MS); past it a read is a 429. */
  readQueue: number;
}

function count(env: NodeJS.ProcessEnv, name: string, def: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new ConfigError(`${name} must be an integer from 1 to ${max}, got "${raw}"`);
  return n;
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX = /^([A-Za-z0-9_][A-Za-z0-9._-]*\/)*$/;

export function loadBlobConfig(env: NodeJS.ProcessEnv): BlobConfig {
  const backend = env.DEVBOXD_BLOB_BACKEND || 'fs';
  if (backend === 'fs') return { backend };
  if (backend !== 's3') throw new ConfigError(`DEVBOXD_BLOB_BACKEND must be fs or s3, got "${backend}"`);

  const endpoint = env.DEVBOXD_S3_ENDPOINT || undefined;
  if (endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      /* reported below */
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.username || url.password || url.search || url.hash) {
      throw new ConfigError(`DEVBOXD_S3_ENDPOINT must be an http:// or https:// URL without credentials or query, got "${endpoint}"`);
    }
  }
  const bucket = env.DEVBOXD_S3_BUCKET || '';
  if (!bucket) throw new ConfigError('DEVBOXD_S3_BUCKET is required when DEVBOXD_BLOB_BACKEND=s3');
  if (!BUCKET.test(bucket))
    throw new ConfigError(`DEVBOXD_S3_BUCKET must be an S3 bucket name (3 to 63 lower-case letters, digits, "." or "-"), got "${bucket}"`);
  const region = env.DEVBOXD_S3_REGION || 'us-east-1';
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new ConfigError(`DEVBOXD_S3_REGION must be a region name such as us-east-1, got "${region}"`);

  const accessKeyId = env.DEVBOXD_S3_ACCESS_KEY_ID || '';
  const secretAccessKey = env.DEVBOXD_S3_SECRET_ACCESS_KEY || '';
  if (!accessKeyId !== !secretAccessKey) {
    throw new ConfigError('DEVBOXD_S3_ACCESS_KEY_ID and DEVBOXD_S3_SECRET_ACCESS_KEY must be set together (or neither, for the AWS default credential chain)');
  }

  // A prefix is whole path segments: `devboxd` and `/devboxd/` both mean `devboxd/`.
  const rawPrefix = (env.DEVBOXD_S3_PREFIX ?? '').replace(/^\/+|\/+$/g, '');
  const prefix = rawPrefix ? `${rawPrefix}/` : '';
  if (!PREFIX.test(prefix) || prefix.length > 512) {
    throw new ConfigError(`DEVBOXD_S3_PREFIX must be slash-separated segments of letters, digits, ".", "_" or "-", got "${env.DEVBOXD_S3_PREFIX}"`);
  }

  // Self-hosted S3 servers (MinIO, s3rver, Ceph) are usually reached by path; AWS itself by virtual host.
  const pathStyle = env.DEVBOXD_S3_FORCE_PATH_STYLE || (endpoint ? 'true' : 'false');
  if (pathStyle !== 'true' && pathStyle !== 'false') {
    throw new ConfigError(`DEVBOXD_S3_FORCE_PATH_STYLE must be true or false, got "${pathStyle}"`);
  }

  return {
    backend,
    endpoint,
    bucket,
    region,
    credentials: accessKeyId ? { accessKeyId, secretAccessKey } : undefined,
    prefix,
    forcePathStyle: pathStyle === 'true',
    reads: count(env, 'DEVBOXD_S3_READS', 64, 4096),
    readQueue: count(env, 'DEVBOXD_S3_READ_QUEUE', 256, 100_000),
  };
}
