import type { LaunchParameters } from '../devboxes/index.js';

// The specs are here, not in code-mounts.ts and services.ts (which re-export them): those import this file.
/** A code mount as the request sends it (`token` is replaced by `token_sealed` once stored). */
export interface CodeMountSpec {
  repo_name: string;
  repo_owner: string;
  token?: string | null;
  git_ref?: string | null;
  install_command?: string | null;
}

/** A service as the request gives it (wire names, echoed in `parameters` without its credentials). */
export interface ServiceSpec {
  name: string;
  image: string;
  credentials?: { username: string; password: string } | null;
  env?: Record<string, string> | null;
  options?: string | null;
  port_mappings?: string[] | null;
}

export const BLUEPRINT_STATUSES = ['queued', 'provisioning', 'building', 'build_complete', 'failed'] as const;
export type BlueprintStatus = (typeof BLUEPRINT_STATUSES)[number];
/** Statuses a build may still leave (a restart finds it in one of them and settles it). */
export const BUILDING: readonly BlueprintStatus[] = ['queued', 'provisioning', 'building'];

export type BuildFailure = 'out_of_memory' | 'out_of_disk' | 'build_failed';

/** The request as the client sent it (wire names): echoed back as the view's `parameters`. */
export interface BuildParameters {
  name: string;
  dockerfile?: string | null;
  system_setup_commands?: string[] | null;
  base_blueprint_id?: string | null;
  base_blueprint_name?: string | null;
  build_args?: Record<string, string> | null;
  build_context?: { type: 'object'; object_id: string } | null;
  file_mounts?: Record<string, string> | null;
  launch_parameters?: LaunchParameters | null;
  metadata?: Record<string, string> | null;
  secrets?: Record<string, string> | null;
  network_policy_id?: string | null;
  code_mounts?: CodeMountSpec[] | null;
  services?: ServiceSpec[] | null;
}

/** What a built image says about the boxes that start on it (Dockerfile ENV, WORKDIR, USER, ENTRYPOINT/CMD). */
export interface ImageConfig {
  env: Record<string, string>;
  /** Absolute; null: the box user's home. */
  workdir: string | null;
  /** `name` or `name:group` or a uid, as USER said; null: the devbox default user. */
  user: { name: string; uid: number } | null;
  entrypoint: string[] | null;
  cmd: string[] | null;
  /** Whether ENTRYPOINT/CMD were given in shell form (run through the image's SHELL). */
  shell: string[];
  labels: Record<string, string>;
  exposedPorts: string[];
}

export const EMPTY_IMAGE: ImageConfig = {
  env: {},
  workdir: null,
  user: null,
  entrypoint: null,
  cmd: null,
  shell: ['/bin/sh', '-c'],
  labels: {},
  exposedPorts: [],
};

export interface Blueprint {
  id: string;
  accountId: string;
  name: string;
  status: BlueprintStatus;
  failureReason: BuildFailure | null;
  /** Why the build failed, readable (also the last log line). */
  failureMessage: string | null;
  parameters: BuildParameters;
  metadata: Record<string, string>;
  isPublic: boolean;
  baseBlueprintId: string | null;
  /** Image layers, newest first; the default image lies under them. Empty until build_complete. */
  layers: string[];
  image: ImageConfig;
  createTimeMs: number;
  buildFinishTimeMs: number | null;
  /** The server that builds it (its layers live there). */
  node: string;
}

export interface BuildLogLine {
  level: 'info' | 'error';
  message: string;
  timestampMs: number;
}

export interface BlueprintFilters {
  name?: string;
  status?: BlueprintStatus;
}
