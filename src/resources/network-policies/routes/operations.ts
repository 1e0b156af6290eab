import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Network policies in the API reference (/docs). */
export const networkPolicyOperations: OperationDocs = {
  tag: 'Network policies',
  operations: {
    'POST /v1/network-policies': {
      sdk: ['networkPolicies.create'],
      summary: 'Create a network policy',
      description:
        'Egress rules for devboxes and blueprint builds: host names, IPv4 CIDRs with ports, other devboxes, the gateways, or everything. ' +
        'Boxes name it with `launch_parameters.network_policy_id`. `egress.closed_cidrs` in the answer shows what of `allowed_cidrs` this ' +
        'server keeps closed whatever the policy (private ranges the operator did not open).',
    },
    'GET /v1/network-policies': {
      sdk: ['networkPolicies.list'],
      summary: 'List network policies',
      description: "The account's policies in cursor pages; `id`, `name` (part of it) and `search` filter.",
    },
    'GET /v1/network-policies/{id}': {
      sdk: ['networkPolicies.retrieve'],
      summary: 'Get a network policy',
      description: 'One policy of the account, by id.',
    },
    'POST /v1/network-policies/{id}': {
      sdk: ['networkPolicies.update'],
      summary: 'Update a network policy',
      description: 'A field left out or null stays as it is; one given replaces the stored one whole. Running boxes under it follow the change.',
    },
    'POST /v1/network-policies/{id}/delete': {
      sdk: ['networkPolicies.delete'],
      summary: 'Delete a network policy',
      description: 'Deletes the policy and answers its last view. A policy a devbox that has not ended uses is a 409.',
    },
  },
};
