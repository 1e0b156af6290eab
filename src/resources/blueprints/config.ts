import { intSetting } from '../../platform/config-error.js';
import type { Env } from '../../platform/module/index.js';

/** Blueprint builds and the services of boxes booted from blueprints. Parsed by the module from the environment (its `config`). */
export interface BlueprintConfig {
  /** DEVBOXD_BLUEPRINT_BUILDS: blueprint builds running at once (more wait, queued). */
  blueprintBuilds: number;
  /** DEVBOXD_BLUEPRINT_ACCOUNT_BUILDS: builds one account may have queued or running at once (a create past it is a 429). */
  blueprintAccountBuilds: number;
  /** DEVBOXD_BLUEPRINT_BUILD_TIMEOUT: seconds a build may take before it fails. */
  blueprintBuildTimeoutSeconds: number;
  /** DEVBOXD_SERVICE_READY_TIMEOUT: seconds a devbox's services have to pull and listen on their ports. */
  serviceReadyTimeoutSeconds: number;
  /** DEVBOXD_SERVICE_PULLS: service image pulls running at once, host-wide (more wait, within their deadline). */
  servicePulls: number;
}

export function loadBlueprintConfig(env: Env): BlueprintConfig {
  return {
    blueprintBuilds: intSetting('DEVBOXD_BLUEPRINT_BUILDS', env.DEVBOXD_BLUEPRINT_BUILDS, 2, 1, 256),
    blueprintAccountBuilds: intSetting('DEVBOXD_BLUEPRINT_ACCOUNT_BUILDS', env.DEVBOXD_BLUEPRINT_ACCOUNT_BUILDS, 10, 1, 100_000),
    blueprintBuildTimeoutSeconds: intSetting('DEVBOXD_BLUEPRINT_BUILD_TIMEOUT', env.DEVBOXD_BLUEPRINT_BUILD_TIMEOUT, 3600, 1, 7 * 24 * 3600),
    serviceReadyTimeoutSeconds: intSetting('DEVBOXD_SERVICE_READY_TIMEOUT', env.DEVBOXD_SERVICE_READY_TIMEOUT, 300, 1, 3600),
    servicePulls: intSetting('DEVBOXD_SERVICE_PULLS', env.DEVBOXD_SERVICE_PULLS, 2, 1, 64),
  };
}
