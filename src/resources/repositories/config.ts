import { ConfigError } from '../../platform/config-error.js';

/** Repository connection settings (part of Config, parsed once at start). */
export interface RepositoryConfig {
  /**
   * DEVBOXD_GIT_BASE_URL: repositories are fetched from `<this>/<owner>/<name>` over git's smart HTTP
   * protocol (default https://github.com; a private forge, or a test's git server).
   */
  gitBaseUrl: string;
  /** DEVBOXD_REPOSITORY_INSPECTIONS: inspections running at once; more wait, inspection_pending. */
  inspections: number;
  /** DEVBOXD_REPOSITORY_INSPECTION_TIMEOUT: seconds one inspection (clone and survey) may take. */
  inspectionTimeoutSeconds: number;
  /** DEVBOXD_CODE_MOUNT_TIMEOUT: seconds a box's code mounts (clone and install command) may take at boot. */
  codeMountTimeoutSeconds: number;
}

export function loadRepositoryConfig(env: NodeJS.ProcessEnv, int: (name: string, def: number, min: number, max: number) => number): RepositoryConfig {
  const raw = (env.DEVBOXD_GIT_BASE_URL || 'https://github.com').trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`DEVBOXD_GIT_BASE_URL must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`DEVBOXD_GIT_BASE_URL must be an http(s) URL, got "${raw}"`);
  if (url.username || url.password || url.search || url.hash) throw new ConfigError('DEVBOXD_GIT_BASE_URL must carry no credentials, query or fragment');
  return {
    gitBaseUrl: raw,
    inspections: int('DEVBOXD_REPOSITORY_INSPECTIONS', 2, 1, 64),
    inspectionTimeoutSeconds: int('DEVBOXD_REPOSITORY_INSPECTION_TIMEOUT', 600, 5, 24 * 3600),
    codeMountTimeoutSeconds: int('DEVBOXD_CODE_MOUNT_TIMEOUT', 900, 5, 24 * 3600),
  };
}
