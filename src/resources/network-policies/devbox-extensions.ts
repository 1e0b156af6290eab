import type { Logger } from '../../lib/logger.js';
import type { NetworkConfig } from '../../network-config.js';
import { ERRORS } from '../../platform/errors.js';
import type { EgressRules, RuntimeDriver } from '../../runtime/driver.js';
import type { BootStep, CreateResolver, StopListener } from '../devboxes/index.js';
import type { NetworkPolicyService, PolicyChanged } from './network-policy-service.js';
import { SqlNetworkPolicyStore } from './sql-network-policy-store.js';
import type { Egress } from './types.js';

/** A boot's network step fails rather than hold the box in provisioning when the kernel or DNS never answers. */
const BOOT_TIMEOUT_MS = 30_000;

/** The box-services prefix of the MCP hub; every other prefix but `/_whoami` is the agent gateway's. */
const MCP_PREFIX = '/mcp';
/** Other boxes' tunnels, reached through the box services (tunnels' `fromBox`). */
export const TUNNEL_PREFIX = '/tunnel';

export interface BoxEgress {
  resolver: CreateResolver;
  bootStep: BootStep;
  onStopped: StopListener;
  /** Applies the policy of every box adopted after a restart (rules rewritten, the runtime's DNS answering again). */
  reattach(ids: string[]): Promise<void>;
  /** A policy changed: its boxes on this server get the new rules. */
  changed: PolicyChanged;
  /**
   * A sandbox that is not a devbox (a blueprint build's step) under `egress` (a policy's; null: what a box
   * without a policy gets), DNS included, until its destroy (its box services until `onStopped(id)`).
   */
  attachSandbox(id: string, egress: Egress | null): Promise<void>;
  /** Whether the box's policy lets it use the box service under `prefix` (MCP hub, agent gateway). */
  allowsService(boxId: string, prefix: string): boolean;
}

/**
 * What network policies contribute to devboxes. At create, `launch_parameters.network_policy_id` must name a
 * policy of the account (400 otherwise) and the binding is written with the box. At every boot (create,
 * resume) and adoption, the box's rules go to the runtime, whose DNS answers the box by them: the policy's,
 * or DEVBOXD_DEFAULT_EGRESS's for a box without one. The policy in force per box is kept here, so the box
 * services decide without a database read.
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

  // Every change of a box's rules runs in one queue per box, and each reads the policy when its turn comes:
  // a boot and updates racing it end on the policy stored last, in the kernel and in `inForce` alike.
  const queues = new Map<string, Promise<void>>();
  /** Boxes whose boot or adoption is under way: an update in that window queues a re-read for them. */
  const starting = new Set<string>();
  const apply = (id: string): Promise<void> => {
    const run = async () => {
      // Stopped while this change waited its turn: nothing of the box is left to set.
      if (!starting.has(id) && !inForce.has(id)) return;
      const egress = (await deps.store.policyOf(id))?.egress ?? fallback;
      const net = await runtime.network(id);
      inForce.set(id, egress);
      if (!net) return;
      // The runtime's DNS reads the rules set last at every question: its sockets are made once per boot.
      await runtime.setEgress(id, toRules(egress, config.mirrors));
    };
    const next = (queues.get(id) ?? Promise.resolve()).catch(() => undefined).then(run);
    const tail = next.catch(() => undefined);
    queues.set(id, tail);
    void tail.then(() => queues.get(id) === tail && queues.delete(id));
    return next;
  };

  const attach = async (id: string): Promise<void> => {
    starting.add(id);
    try {
      await withTimeout(apply(id), BOOT_TIMEOUT_MS, `the network of devbox ${id} was not set up within ${BOOT_TIMEOUT_MS / 1000} s`);
    } finally {
      starting.delete(id);
    }
  };

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
      alongside: true,
      applies: () => true,
      // A pooled box's network is up under the rules of a box without a policy: a take redoes them only when
      // the create bound one.
      run: async (ctx) => {
        if (ctx.taken && !(await deps.store.policyOf(ctx.devbox.id))) return;
        await attach(ctx.devbox.id);
      },
    },
    // The box's DNS stops with its sandbox, in the runtime.
    onStopped(id) {
      inForce.delete(id);
    },
    async reattach(ids) {
      await Promise.all(ids.map((id) => attach(id).catch((err) => log.error({ err, devbox: id }, 'egress of an adopted box failed'))));
    },
    async changed(_policy, ids) {
      const failed = (await Promise.allSettled(ids.filter((id) => inForce.has(id) || starting.has(id)).map((id) => apply(id)))).filter(
        (r) => r.status === 'rejected',
      );
      if (failed.length)
        throw new Error(`${failed.length} of the policy's running boxes did not take the new rules: ${(failed[0] as PromiseRejectedResult).reason}`);
    },
    async attachSandbox(id, egress) {
      const e = egress ?? fallback;
      inForce.set(id, e);
      const net = await runtime.network(id);
      if (!net) return;
      await withTimeout(
        runtime.setEgress(id, toRules(e, config.mirrors)),
        BOOT_TIMEOUT_MS,
        `the network of sandbox ${id} was not set up within ${BOOT_TIMEOUT_MS / 1000} s`,
      );
    },
    allowsService(boxId, prefix) {
      if (prefix === '/_whoami') return true;
      // A box whose policy is not in force (its adoption failed to read it) reaches neither service.
      const e = inForce.get(boxId);
      if (!e) return false;
      if (prefix === TUNNEL_PREFIX) return e.allowDevboxToDevbox;
      return prefix === MCP_PREFIX || prefix.startsWith(`${MCP_PREFIX}/`) ? e.allowMcpGateway : e.allowAgentGateway;
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(ERRORS.unavailable(message)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** A policy's egress as the runtime takes it; `mirrors` (DEVBOXD_MIRRORS) are names it answers under allow_runloop_mirrors. */
export function toRules(e: Egress, mirrors: string[]): EgressRules {
  return {
    allowAll: e.allowAll,
    hostnames: [...e.allowedHostnames, ...(e.allowRunloopMirrors ? mirrors : [])],
    cidrs: e.allowedCidrs.map((c) => ({
      cidr: c.cidr,
      ports: c.ports.map((p) => ({ port: p.port, endPort: p.endPort ?? undefined, protocol: p.protocol ?? undefined })),
    })),
  };
}
