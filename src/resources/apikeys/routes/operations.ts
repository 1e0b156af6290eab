import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** API keys in the API reference (/docs). */
export const apiKeyOperations: OperationDocs = {
  tag: 'API keys',
  operations: {
    'POST /v1/apikeys': {
      sdk: ['apikeys.create'],
      summary: 'Create an API key',
      description:
        'A new standard key of the account, answered once with its secret (only its digest is kept). Called with a restricted key that ' +
        "has account write, it makes a restricted key with that key's own scopes, never wider, and says so (`kind`, `scopes`). A retry " +
        'with the same `x-request-id` answers the same key.',
    },
    'POST /v1/restricted_keys': {
      sdk: ['restrictedKeys.create'],
      summary: 'Create a restricted API key',
      description:
        'A new key limited to `scopes` (a resource type and an access level each; types left out get none), answered once with its ' +
        "secret. A scope above the calling key's own is a 403. A retry with the same `x-request-id` answers the same key.",
    },
    'GET /v1/apikeys': {
      own: 'apikeys.list',
      summary: 'List API keys',
      description: "The account's keys that are not revoked, standard and restricted, in cursor pages: never a secret, its last 4 characters.",
    },
    'POST /v1/apikeys/{id}/delete': {
      own: 'apikeys.delete',
      summary: 'Revoke an API key',
      description: 'Revokes a key of either kind (itself included) and answers it with `revoked_at_ms`; its next request gets a 401.',
    },
  },
};
