/** Agent settings (part of Config, parsed once at start). */
export interface AgentConfig {
  /** DEVBOXD_AGENT_INSTALL_TIMEOUT: seconds a box's agent mounts' installs (and their agent_setup), all together, may take. */
  installTimeoutSeconds: number;
  /** DEVBOXD_AGENT_ACCOUNT_MAX: most agents one account holds at once (a create past it gets 403). */
  accountMax: number;
}

export function loadAgentConfig(int: (name: string, def: number, min: number, max: number) => number): AgentConfig {
  return {
    installTimeoutSeconds: int('DEVBOXD_AGENT_INSTALL_TIMEOUT', 600, 1, 86_400),
    accountMax: int('DEVBOXD_AGENT_ACCOUNT_MAX', 1000, 1, 10_000_000),
  };
}
