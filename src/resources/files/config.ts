import { intSetting } from '../../platform/config-error.js';
import type { Env } from '../../platform/module/index.js';

/** Files in boxes: the gates of file contents and transfers, the upload stall. Parsed by the module from the environment (its `config`). */
export interface FileConfig {
  /** DEVBOXD_FILE_CONTENTS_CONCURRENCY: read_file_contents / write_file_contents requests held in memory at once; more wait in a queue. */
  fileContentsConcurrency: number;
  /** DEVBOXD_FILE_CONTENTS_QUEUE: such requests that may wait; past it they get 429 with Retry-After. */
  fileContentsQueue: number;
  /** DEVBOXD_FILE_TRANSFER_CONCURRENCY: upload_file / download_file streams running at once; more wait in a queue. */
  fileTransferConcurrency: number;
  /** DEVBOXD_FILE_TRANSFER_QUEUE: such transfers that may wait; past it they get 429 with Retry-After. */
  fileTransferQueue: number;
  /** DEVBOXD_UPLOAD_STALL_MS: an upload whose client sends no byte for this long (while the server waits) gets 408. */
  uploadStallMs: number;
}

export function loadFileConfig(env: Env): FileConfig {
  return {
    fileContentsConcurrency: intSetting('DEVBOXD_FILE_CONTENTS_CONCURRENCY', env.DEVBOXD_FILE_CONTENTS_CONCURRENCY, 4, 1, 1024),
    fileContentsQueue: intSetting('DEVBOXD_FILE_CONTENTS_QUEUE', env.DEVBOXD_FILE_CONTENTS_QUEUE, 64, 0, 100_000),
    fileTransferConcurrency: intSetting('DEVBOXD_FILE_TRANSFER_CONCURRENCY', env.DEVBOXD_FILE_TRANSFER_CONCURRENCY, 32, 1, 65536),
    fileTransferQueue: intSetting('DEVBOXD_FILE_TRANSFER_QUEUE', env.DEVBOXD_FILE_TRANSFER_QUEUE, 256, 0, 1_000_000),
    uploadStallMs: intSetting('DEVBOXD_UPLOAD_STALL_MS', env.DEVBOXD_UPLOAD_STALL_MS, 60_000, 100, 3_600_000),
  };
}
