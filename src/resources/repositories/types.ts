/** A repository connection: `<git base>/<owner>/<name>`, with an optional token (sealed at rest). */
export interface RepositoryConnection {
  id: string;
  accountId: string;
  owner: string;
  name: string;
  /** The blueprint inspections run on (its tools), when the connection names one. */
  blueprintId: string | null;
  /** The token sealed under the master key, or null. */
  tokenSealed: string | null;
  createTimeMs: number;
}

export const INSPECTION_STATUSES = [
  'invalid',
  'repo_auth_pending',
  'repo_authentication_failure',
  'repo_access_failure',
  'inspection_pending',
  'inspection_failed',
  'inspection_success',
  'inspection_user_manifest_added',
] as const;
export type InspectionStatus = (typeof INSPECTION_STATUSES)[number];

/** One inspection of a connection (or a user manifest added to it). */
export interface Inspection {
  id: string;
  repositoryId: string;
  status: InspectionStatus;
  /** The inspected commit; '' until the clone is done (and for a user manifest without a prior inspection). */
  commitSha: string;
  inspectedAtMs: number;
  manifest: RepositoryManifest | null;
  userManifest: RepositoryManifest | null;
  /** Why a failed inspection failed (clone, survey), in words. */
  failureReason: string | null;
}

/*
 * The repository manifest (service interface "Repository manifest"), in its wire shape: it is the product
 * of an inspection, stored and served as it is.
 */

export interface DevCommands {
  install?: string[] | null;
  build?: string[] | null;
  test?: string[] | null;
  lint?: string[] | null;
  scripts?: string[] | null;
}

export interface Workspace {
  name?: string | null;
  path?: string | null;
  build_tool: string[];
  workspace_setup_commands?: string[] | null;
  workspace_refresh_commands?: string[] | null;
  dev_commands?: DevCommands | null;
}

export interface ContainerizedService {
  name: string;
  image: string;
  credentials?: { username: string; password: string } | null;
  env?: Record<string, string> | null;
  port_mappings?: string[] | null;
  options?: string | null;
}

export interface ContainerConfig {
  base_image_name: string;
  setup_commands?: string[] | null;
  architecture?: 'x86_64';
}

export interface RepositoryManifest {
  container_config: ContainerConfig;
  workspaces: Workspace[];
  containerized_services?: ContainerizedService[] | null;
  languages: { language: string; version?: string }[];
  required_env_vars?: string[] | null;
  env_vars?: Record<string, string> | null;
}

/** What add_user_manifest takes (the request shape: no languages, no services). */
export type UserManifestInput = Pick<RepositoryManifest, 'workspaces' | 'required_env_vars' | 'env_vars'> & {
  container_config: Omit<ContainerConfig, 'architecture'> & { architecture?: string };
};
