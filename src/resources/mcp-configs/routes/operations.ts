import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** MCP configs and the devbox's MCP token in the API reference (/docs). */
export const mcpConfigOperations: OperationDocs = {
  tag: 'MCP configs',
  operations: {
    'POST /v1/mcp-configs': {
      sdk: ['mcpConfigs.create'],
      summary: 'Create an MCP config',
      description:
        'An upstream MCP server (`endpoint`) and the tools devboxes may call on it (`allowed_tools`, globs). Boxes created with `mcp` reach ' +
        "it through this server's MCP hub with a token of their own; the credential, from a secret, never enters the box.",
    },
    'GET /v1/mcp-configs': {
      sdk: ['mcpConfigs.list'],
      summary: 'List MCP configs',
      description: "The account's MCP configs in cursor pages; `id`, `name` (a prefix) and `search` filter.",
    },
    'GET /v1/mcp-configs/{id}': {
      sdk: ['mcpConfigs.retrieve'],
      summary: 'Get an MCP config',
      description: 'One MCP config of the account: custom headers show their names and secret ids, never a value.',
    },
    'POST /v1/mcp-configs/{id}': {
      sdk: ['mcpConfigs.update'],
      summary: 'Update an MCP config',
      description: 'A field left out or null stays as it is; `custom_headers` replaces the whole list (`[]` clears it), `""` clears the description.',
    },
    'POST /v1/mcp-configs/{id}/delete': {
      sdk: ['mcpConfigs.delete'],
      summary: 'Delete an MCP config',
      description: 'Deletes the config and answers its last view.',
    },
    'POST /v1/devboxes/{id}/create_mcp_token': {
      sdk: ['devboxes.createMcpToken'],
      summary: 'Mint an MCP hub token for a devbox',
      description:
        'A further token for a devbox that has not ended, bound to it and to one MCP config (`mcp_config`) and `secret` (ids or names), ' +
        'handed to the caller only; it dies with the box. Needs devbox write. A retry with the same `x-request-id` answers the same token.',
    },
  },
};
