/** The kinds of source an agent is installed from. */
export const SOURCE_TYPES = ['npm', 'pip', 'git', 'object'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/**
 * Where an agent comes from, in the API's shape (it is echoed as given): `type` and the one part it names.
 * `npm_version` / `pip_version` are what the SDK's createFromNpm / createFromPip send beside the types.
 */
export interface AgentSource {
  type: SourceType;
  npm?: { package_name: string; registry_url?: string | null; npm_version?: string | null; agent_setup?: string[] | null } | null;
  pip?: { package_name: string; registry_url?: string | null; pip_version?: string | null; agent_setup?: string[] | null } | null;
  git?: { repository: string; ref?: string | null; agent_setup?: string[] | null } | null;
  object?: { object_id: string; agent_setup?: string[] | null } | null;
}

export interface Agent {
  id: string;
  accountId: string;
  name: string;
  version: string | null;
  source: AgentSource | null;
  /** Marked by the operator (`devboxd agents publish`): listed by list_public, mountable by every account. */
  isPublic: boolean;
  createTimeMs: number;
}

export interface AgentListFilter {
  isPublic?: boolean;
  /** Part of the name, any case. */
  name?: string;
  /** The id, or part of the name. */
  search?: string;
  /** An exact version, or `latest`: the most recently created agent of each name. */
  version?: string;
}

export type { AgentMount as AgentMountInput } from '../devboxes/index.js';

/** An agent mount as resolved at create and recorded with the box: what its boot installs. */
export interface ResolvedAgentMount {
  agent: Pick<Agent, 'id' | 'accountId' | 'name' | 'version' | 'source'>;
  agentPath: string | null;
}
