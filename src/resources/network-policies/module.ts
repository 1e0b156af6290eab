import type { Module } from '../../host.js';
import { closedRanges } from '../../platform/net/index.js';
import { devboxesModule } from '../devboxes/index.js';
import { type BoxEgress, networkPolicyExtensions } from './devbox-extensions.js';
import { NetworkPolicyService } from './network-policy-service.js';
import { networkPolicyRoutes } from './routes/index.js';
import { NETWORK_POLICIES_SCHEMA } from './schema.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    networkPolicies: NetworkPolicyService;
    /** The boxes' egress: rules per box (the runtime's DNS answers by them), set at boot and changed with their policy. */
    egress: BoxEgress;
  }
}

/** Network policies and the egress rules (DNS answers among them) and box-service access each box gets from its policy. */
export const networkPoliciesModule: Module = {
  name: 'network-policies',
  needs: [devboxesModule],
  schema: NETWORK_POLICIES_SCHEMA,
  build({ host, use }) {
    const { config } = host;
    const networkPolicies = new NetworkPolicyService(
      host.store,
      host.node,
      host.logger.child({ component: 'network-policies' }),
      () => egress.changed,
      closedRanges({ subnet: config.network.boxSubnet, deny: config.network.egressDeny, privateAllow: config.network.egressPrivateAllow }),
    );
    const egress = networkPolicyExtensions({
      policies: () => networkPolicies,
      store: networkPolicies.policies,
      runtime: host.runtime,
      config: config.network,
      log: host.logger.child({ component: 'egress' }),
    });
    host.boxServices.policy((box, prefix) => egress.allowsService(box, prefix));
    const ext = use('devboxExtensions');
    ext.resolver(egress.resolver);
    ext.bootStep(egress.bootStep, 'network');
    ext.onStopped(egress.onStopped);
    return { networkPolicies, egress };
  },
  routes: (app, s) => app.register(networkPolicyRoutes, { policies: s.networkPolicies }),
  start: {
    // Adopted boxes get their egress rules again, and with them the runtime's DNS (the rules survive in the
    // kernel, the DNS sockets do not; the policy may have changed meanwhile), before their box services link:
    // what the policy allows of those is known by then.
    reattach: (s) => s.egress.reattach([...s.lifecycle.active.keys()]),
  },
};
