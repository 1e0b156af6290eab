import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/**
 * Repository connections in the API reference (/docs). The SDK dropped `repositories` after 1.14, so these
 * are devboxd's own ids, named as that SDK named the methods.
 */
export const repositoryOperations: OperationDocs = {
  tag: 'Repositories',
  operations: {
    'POST /v1/repositories': {
      own: 'repositories.create',
      summary: 'Connect a repository',
      description:
        'Connects `owner`/`name` on the git server, with an optional token kept sealed (never returned, never in a box), and starts an ' +
        'inspection of it. One connection per repository in an account.',
    },
    'GET /v1/repositories': {
      own: 'repositories.list',
      summary: 'List repository connections',
      description: "The account's connections in cursor pages; `name` and `owner` filter.",
    },
    'GET /v1/repositories/{id}': {
      own: 'repositories.retrieve',
      summary: 'Get a repository connection',
      description: 'One connection of the account, by id.',
    },
    'POST /v1/repositories/{id}/delete': {
      own: 'repositories.delete',
      summary: 'Delete a repository connection',
      description: 'Deletes the connection and its inspections, and answers its last view.',
    },
    'POST /v1/repositories/{id}/inspect': {
      own: 'repositories.inspect',
      summary: 'Inspect a repository',
      description:
        'Starts an inspection (a sandbox clones the default branch and surveys it for languages, build tools, commands, services and ' +
        'environment variables) and answers it; one already pending is answered instead of a second.',
    },
    'POST /v1/repositories/{id}/refresh': {
      own: 'repositories.refresh',
      summary: 'Inspect a repository again (deprecated)',
      description: 'As `inspect`, and may change the blueprint inspections run on (`blueprint_id`). Deprecated in the SDK: use `inspect`.',
    },
    'GET /v1/repositories/{id}/inspections': {
      own: 'repositories.listInspections',
      summary: "List a repository's inspections",
      description: 'The inspections of a connection, newest first; the 50 newest settled ones are kept.',
    },
    'GET /v1/repositories/inspections/{id}': {
      own: 'repositories.retrieveInspection',
      summary: 'Get an inspection',
      description: 'One inspection with its status and the manifest it found (empty while it runs).',
    },
    'POST /v1/repositories/inspections/{id}/add_user_manifest': {
      own: 'repositories.addUserManifest',
      summary: "Amend a repository's manifest",
      description:
        '`{id}` is the connection. Each field given replaces that part of the manifest in force (container config, workspaces, ' +
        'environment variables), whether or not an inspection ran; answers the manifest now in force.',
    },
  },
};
