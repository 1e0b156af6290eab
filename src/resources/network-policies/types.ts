/** A port or inclusive range of an allowed CIDR; no protocol means TCP and UDP. */
export interface PortRule {
  port: number;
  endPort: number | null;
  protocol: 'TCP' | 'UDP' | null;
}

export interface AllowedCidr {
  cidr: string;
  ports: PortRule[];
}

/** What a policy lets its boxes reach (the API's `egress`). */
export interface Egress {
  allowAll: boolean;
  allowedHostnames: string[];
  allowedCidrs: AllowedCidr[];
  allowDevboxToDevbox: boolean;
  allowAgentGateway: boolean;
  allowMcpGateway: boolean;
  allowRunloopMirrors: boolean;
}

export interface NetworkPolicy {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  egress: Egress;
  createTimeMs: number;
  updateTimeMs: number;
}

/** A create or update in domain terms: undefined (or null on the wire) keeps a field as it is. */
export interface PolicyPatch {
  name?: string;
  description?: string | null;
  egress: Partial<Egress>;
}

export interface PolicyListFilter {
  id?: string;
  name?: string;
  search?: string;
}
