import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Agents in the API reference (/docs). */
export const agentOperations: OperationDocs = {
  tag: 'Agents',
  operations: {
    'POST /v1/agents': {
      sdk: ['agents.create'],
      summary: 'Create an agent',
      description:
        'An agent: a `name`, a `version` and a `source` to install it from (npm, pip, git or a storage object), plus setup commands. ' +
        'Devboxes install it at create with an `agent_mount`.',
    },
    'GET /v1/agents': {
      sdk: ['agents.list'],
      summary: 'List agents',
      description: "The account's agents in cursor pages; `name` (part of it), `search` and `version` filter.",
    },
    'GET /v1/agents/list_public': {
      sdk: ['agents.listPublic'],
      summary: 'List public agents',
      description: 'Agents the operator published, which every account may read and mount, in cursor pages.',
    },
    'GET /v1/agents/devbox_counts': {
      sdk: ['agents.devboxCounts'],
      summary: 'Count devboxes per agent',
      description:
        "Per agent name, the account's devboxes that mounted an agent of that name and have not ended (suspended ones count); " +
        '`total_count` counts each box once.',
    },
    'GET /v1/agents/{id}': {
      sdk: ['agents.retrieve'],
      summary: 'Get an agent',
      description: 'One agent the account can read: its own, or a public one.',
    },
    'POST /v1/agents/{id}/delete': {
      sdk: ['agents.delete'],
      summary: 'Delete an agent',
      description: 'Deletes the agent and answers its last view. Boxes that mounted it keep what was installed.',
    },
  },
};
