import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Gateway configs and the devbox's gateway token in the API reference (/docs). */
export const gatewayOperations: OperationDocs = {
  tag: 'Gateway configs',
  operations: {
    'POST /v1/gateway-configs': {
      sdk: ['gatewayConfigs.create'],
      summary: 'Create a gateway config',
      description:
        'An upstream API (`endpoint`) and how the agent gateway applies a credential to it (`auth_mechanism`: bearer, header or basic). ' +
        'Boxes created with `gateways` call it through the gateway with a token of their own; the credential, from a secret, never enters the box.',
    },
    'GET /v1/gateway-configs': {
      sdk: ['gatewayConfigs.list'],
      summary: 'List gateway configs',
      description: "The account's gateway configs in cursor pages; `id`, `name` (part of it) and `search` filter.",
    },
    'GET /v1/gateway-configs/{id}': {
      sdk: ['gatewayConfigs.retrieve'],
      summary: 'Get a gateway config',
      description: 'One gateway config of the account: custom headers show their names and secret ids, never a value.',
    },
    'POST /v1/gateway-configs/{id}': {
      sdk: ['gatewayConfigs.update'],
      summary: 'Update a gateway config',
      description: 'A field left out or null stays as it is; `custom_headers` replaces the whole list (`[]` clears it).',
    },
    'POST /v1/gateway-configs/{id}/delete': {
      sdk: ['gatewayConfigs.delete'],
      summary: 'Delete a gateway config',
      description: 'Deletes the config and answers its last view.',
    },
    'POST /v1/devboxes/{id}/create_gateway_token': {
      sdk: ['devboxes.createGatewayToken'],
      summary: 'Mint a gateway token for a devbox',
      description:
        'A token that lets a devbox call one gateway config (`gateway`) with the credential in `secret` (ids or names), through the ' +
        'gateway at `url`; bound to the box, it dies with it. Needs devbox write. A retry with the same `x-request-id` answers the same token.',
    },
  },
};
