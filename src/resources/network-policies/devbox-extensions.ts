import type { Logger } from '../../lib/logger.js';
import type { NetworkConfig } from '../../network-config.js';
import { ERRORS } from '../../platform/errors.js';
import type { EgressRules, RuntimeDriver } from '../../runtime/driver.js';
import type { BootStep, CreateResolver, StopListener } from '../devboxes/extensions.js';
import { DnsForwarder, type NameDecision } from './dns-forwarder.js';
import type { NetworkPolicyService, PolicyChanged } from './network-policy-service.js';
import { hostMatcher } from './rules.js';
import { SqlNetworkPolicyStore } from './sql-network-policy-store.js';
import type { Egress } from './types.js';

/** The box-services prefix of the MCP hub; every other prefix but `/_whoami` is the agent gateway's. */
const MCP_PREFIX = '/mcp';

export interface BoxEgress {
  resolver: CreateResolver;
  bootStep: BootStep;
  onStopped: StopListener;
  /** Applies the policy of every box adopted after a restart (rules rewritten, DNS answered again). */
  reattach(ids: string[]): Promise<void>;
  /** A policy changed: its boxes on this server get the new rules. */
  changed: PolicyChanged;
  /** Whether the box's policy lets it use the box service under `prefix` (MCP hub, agent gateway). */
  allowsService(boxId: string, prefix: string): boolean;
  close(): void;
}

/**
 * What network policies contribute to devboxes. At create, `launch_parameters.network_policy_id` must name a
 * policy of the account (400 otherwise) and the binding is written with the box. At every boot (create,
 * resume) and adoption, the box's rules go to the runtime and its DNS forwarder starts: the policy's, or
 * DEVBOXD_DEFAULT_EGRESS's for a box without one. The rules in force per box are kept here, so DNS and the
 * box services decide without a database read.
 */
export function networkPolicyExtensions(deps: {
  policies: () => NetworkPolicyService;
  store: SqlNetworkPolicyStore;
  runtime: RuntimeDriver;
  config: NetworkConfig;
  log: Logger;
}): BoxEgress {
  const { runtime, config, log } = deps;
  const inForce = new Map<string, Egress>();
  const matchers = new WeakMap<Egress, (name: string) => boolean>();
  const dns = new DnsForwarder({ upstream: config.dnsUpstream, pin: (id, a, ttl) => runtime.pinEgress(id, a, ttl), log });
  const fallback: Egress = {
    allowAll: config.defaultEgress === 'allow',
    allowedHostnames: [],
    allowedCidrs: [],
    allowDevboxToDevbox: false,
    // Without a policy the box services a box was created with stay reachable.
    allowAgentGateway: true,
    allowMcpGateway: true,
    allowRunloopMirrors: config.defaultEgress === 'allow',
  };

  const decide = (id: string) => (name: string): NameDecision => {
    const e = inForce.get(id);
    if (!e) return 'deny';
    if (e.allowAll) return 'forward';
    let match = matchers.get(e);
    if (!match) {
      match = hostMatcher([...e.allowedHostnames, ...(e.allowRunloopMirrors ? config.mirrors : [])]);
      matchers.set(e, match);
    }
    return match(name) ? 'pin' : 'deny';
  };

  const apply = async (id: string, egress: Egress): Promise<void> => {
    inForce.set(id, egress);
    const net = await runtime.network(id);
    if (!net) return;
    await runtime.setEgress(id, toRules(egress));
    await dns.attach(id, net, decide(id));
  };

  const attach = async (id: string): Promise<void> => apply(id, (await deps.store.policyOf(id))?.egress ?? fallback);

  return {
    async resolver(accountId, input) {
      const ref = input.launchParameters?.network_policy_id;
      if (ref === undefined || ref === null) return undefined;
      if (typeof ref !== 'string' || ref === '') throw ERRORS.invalid('launch_parameters.network_policy_id must be a network policy id');
      const policy = await deps.policies().policies.get(accountId, ref);
      if (!policy) throw ERRORS.invalid(`launch_parameters.network_policy_id: no network policy ${ref}`);
      return { persist: (tx, devbox) => new SqlNetworkPolicyStore(tx.db).bind(devbox.id, policy.id) };
    },
    bootStep: {
      name: 'network',
      quiet: true,
      applies: () => true,
      run: (ctx) => attach(ctx.devbox.id),
    },
    onStopped(id) {
      inForce.delete(id);
      dns.detach(id);
    },
    async reattach(ids) {
      await Promise.all(ids.map((id) => attach(id).catch((err) => log.error({ err, devbox: id }, 'egress of an adopted box failed'))));
    },
    async changed(policy, ids) {
      await Promise.all(ids.filter((id) => inForce.has(id)).map((id) => apply(id, policy.egress)));
    },
    allowsService(boxId, prefix) {
      if (prefix === '/_whoami') return true;
      const e = inForce.get(boxId) ?? fallback;
      return prefix === MCP_PREFIX || prefix.startsWith(`${MCP_PREFIX}/`) ? e.allowMcpGateway : e.allowAgentGateway;
    },
    close() {
      dns.close();
    },
  };
}

export function toRules(e: Egress): EgressRules {
  return {
    allowAll: e.allowAll,
    cidrs: e.allowedCidrs.map((c) => ({
      cidr: c.cidr,
      ports: c.ports.map((p) => ({ port: p.port, endPort: p.endPort ?? undefined, protocol: p.protocol ?? undefined })),
    })),
  };
}
