import path from 'node:path';
import type { Logger } from '../../lib/logger.js';
import type { BlobConfig } from './config.js';
import { FsBlobStore } from './fs-blob-store.js';
import type { BlobStore } from './types.js';

/** The blob store the configuration names: local files under `<data>/blobs` (default) or an S3 bucket. */
export async function openBlobStore(config: BlobConfig, dataDir: string, log: Logger): Promise<BlobStore> {
  if (config.backend === 'fs') return FsBlobStore.open(path.join(dataDir, 'blobs'));
  // Loaded only when chosen: the AWS SDK adds a noticeable start-up cost a local store does not need.
  const { S3BlobStore } = await import('./s3-blob-store.js');
  const store = await S3BlobStore.open(config, { warn: (msg, err) => log.warn({ err }, msg) });
  log.info({ bucket: config.bucket, prefix: config.prefix, endpoint: config.endpoint }, 'blobs are stored in S3');
  return store;
}
