import { Type } from 'typebox';
import { Body, Int, Nullable, Opt, pageSchema, StringEnum, Text } from '../../../platform/http/schemas/common.js';
import { MAX_CIDRS, MAX_HOSTNAMES } from '../rules.js';
import type { AllowedCidr, Egress, NetworkPolicy, PolicyPatch } from '../types.js';

const PortRuleSchema = Type.Object(
  {
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'the port, or the start of a range' }),
    end_port: Opt(Type.Integer({ minimum: 1, maximum: 65535, description: 'inclusive end of the range' })),
    protocol: Opt(StringEnum(['TCP', 'UDP'], { description: 'omitted: TCP and UDP' })),
  },
  { additionalProperties: false },
);
const AllowedCidrSchema = Type.Object(
  {
    cidr: Type.String({ maxLength: 18, description: "IPv4 CIDR in canonical form, e.g. '10.12.0.0/16'" }),
    ports: Opt(Type.Array(PortRuleSchema, { maxItems: 64, description: 'empty or omitted: every port and protocol' })),
  },
  { additionalProperties: false },
);

const fields = {
  allow_all: Opt(Type.Boolean()),
  allowed_hostnames: Opt(Type.Array(Type.String({ maxLength: 253 }), { maxItems: MAX_HOSTNAMES, description: "host names, '*.' wildcards" })),
  allowed_cidrs: Opt(Type.Array(AllowedCidrSchema, { maxItems: MAX_CIDRS })),
  allow_devbox_to_devbox: Opt(Type.Boolean()),
  allow_agent_gateway: Opt(Type.Boolean()),
  allow_mcp_gateway: Opt(Type.Boolean()),
  allow_runloop_mirrors: Opt(Type.Boolean({ description: 'the package mirrors the operator configured (DEVBOXD_MIRRORS)' })),
  description: Opt(Text(4096)),
};

export const CreatePolicyBody = Body({ name: Text(256), ...fields });
export const UpdatePolicyBody = Body({ name: Opt(Text(256)), ...fields });
export const PolicyListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 20 })),
  starting_after: Type.Optional(Type.String({ maxLength: 200 })),
  include_total_count: Type.Optional(Type.Boolean({ default: true })),
  id: Type.Optional(Type.String({ maxLength: 200 })),
  name: Type.Optional(Type.String({ maxLength: 256 })),
  search: Type.Optional(Type.String({ maxLength: 256 })),
});

const AllowedCidrView = Type.Object({
  cidr: Type.String(),
  ports: Type.Array(Type.Object({ port: Int, end_port: Nullable(Int), protocol: Nullable(StringEnum(['TCP', 'UDP'])) })),
});
export const PolicyViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    create_time_ms: Int,
    update_time_ms: Int,
    egress: Type.Object({
      allow_all: Type.Boolean(),
      allowed_hostnames: Type.Array(Type.String()),
      allowed_cidrs: Type.Array(AllowedCidrView),
      allow_devbox_to_devbox: Type.Boolean(),
      allow_agent_gateway: Type.Boolean(),
      allow_mcp_gateway: Type.Boolean(),
      allow_runloop_mirrors: Type.Boolean(),
      closed_cidrs: Type.Array(Type.String(), {
        description:
          'the parts of allowed_cidrs boxes do not reach on this server whatever the policy: private ranges the operator has not opened (DEVBOXD_EGRESS_PRIVATE_ALLOW), shared, link-local, loopback and the other ranges of the floor',
      }),
    }),
  },
  { title: 'NetworkPolicyView', description: 'a network policy: what the devboxes under it reach' },
);
export const PolicyListView = pageSchema('network_policies', PolicyViewSchema);

type Wire = {
  name?: string | null;
  description?: string | null;
  allow_all?: boolean | null;
  allowed_hostnames?: string[] | null;
  allowed_cidrs?: { cidr: string; ports?: { port: number; end_port?: number | null; protocol?: 'TCP' | 'UDP' | null }[] | null }[] | null;
  allow_devbox_to_devbox?: boolean | null;
  allow_agent_gateway?: boolean | null;
  allow_mcp_gateway?: boolean | null;
  allow_runloop_mirrors?: boolean | null;
};

/** null on the wire keeps a field as it is (`undefined` here); given fields replace the stored ones whole. */
const keep = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

export function toPatch(b: Wire): PolicyPatch {
  const cidrs = keep(b.allowed_cidrs)?.map(
    (c): AllowedCidr => ({ cidr: c.cidr, ports: (c.ports ?? []).map((p) => ({ port: p.port, endPort: p.end_port ?? null, protocol: p.protocol ?? null })) }),
  );
  const egress: Partial<Egress> = {
    allowAll: keep(b.allow_all),
    allowedHostnames: keep(b.allowed_hostnames),
    allowedCidrs: cidrs,
    allowDevboxToDevbox: keep(b.allow_devbox_to_devbox),
    allowAgentGateway: keep(b.allow_agent_gateway),
    allowMcpGateway: keep(b.allow_mcp_gateway),
    allowRunloopMirrors: keep(b.allow_runloop_mirrors),
  };
  return { name: keep(b.name), description: keep(b.description), egress };
}

/** `closed`: the parts of the policy's CIDRs its boxes do not reach (NetworkPolicyService.closedCidrs). */
export const toView = (p: NetworkPolicy, closed: string[]) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  create_time_ms: p.createTimeMs,
  update_time_ms: p.updateTimeMs,
  egress: {
    allow_all: p.egress.allowAll,
    allowed_hostnames: p.egress.allowedHostnames,
    allowed_cidrs: p.egress.allowedCidrs.map((c) => ({
      cidr: c.cidr,
      ports: c.ports.map((r) => ({ port: r.port, end_port: r.endPort, protocol: r.protocol })),
    })),
    allow_devbox_to_devbox: p.egress.allowDevboxToDevbox,
    allow_agent_gateway: p.egress.allowAgentGateway,
    allow_mcp_gateway: p.egress.allowMcpGateway,
    allow_runloop_mirrors: p.egress.allowRunloopMirrors,
    closed_cidrs: closed,
  },
});
