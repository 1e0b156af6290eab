import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Blueprints in the API reference (/docs). */
export const blueprintOperations: OperationDocs = {
  tag: 'Blueprints',
  operations: {
    'POST /v1/blueprints': {
      sdk: ['blueprints.create'],
      summary: 'Build a blueprint',
      description:
        'Starts building an image from a Dockerfile (or the default image), `system_setup_commands`, file and code mounts and a build ' +
        'context, without Docker: each step runs in a sandbox, unchanged steps come from the cache. Answers at once with the build ' +
        '`queued` or `provisioning`; devboxes boot from it with `blueprint_id` or `blueprint_name` once it is `build_complete`.',
    },
    'POST /v1/blueprints/preview': {
      sdk: ['blueprints.preview'],
      summary: 'Preview a blueprint build',
      description: 'The Dockerfile a build of these parameters would run, setup commands and mounts as steps of their own; builds nothing.',
    },
    'GET /v1/blueprints': {
      sdk: ['blueprints.list'],
      summary: 'List blueprints',
      description: "The account's blueprints in cursor pages; `name` and `status` filter.",
    },
    'GET /v1/blueprints/list_public': {
      sdk: ['blueprints.listPublic'],
      summary: 'List public blueprints',
      description: 'Blueprints the operator published, which every account may boot from, in cursor pages.',
    },
    'GET /v1/blueprints/public/metadata/keys': {
      own: 'blueprints.listPublicMetadataKeys',
      summary: 'List the metadata keys of public blueprints',
      description: 'Every metadata key some public blueprint has.',
    },
    'GET /v1/blueprints/public/metadata/keys/{key}/values': {
      own: 'blueprints.listPublicMetadataValues',
      summary: 'List the values of a public blueprint metadata key',
      description: 'Every value public blueprints have under `key`.',
    },
    'GET /v1/blueprints/{id}': {
      sdk: ['blueprints.retrieve'],
      summary: 'Get a blueprint',
      description: "A blueprint the account can read, with its build's status and, if it failed, why.",
    },
    'GET /v1/blueprints/{id}/logs': {
      sdk: ['blueprints.logs'],
      summary: "Get a blueprint's build log",
      description: "The build's log lines so far, step by step (`#n CACHED …` for a step taken from the cache). Only the owner reads it.",
    },
    'POST /v1/blueprints/{id}/delete': {
      sdk: ['blueprints.delete'],
      summary: 'Delete a blueprint',
      description:
        'Removes the blueprint, its logs and the layers no other blueprint shares. One that devboxes that have not ended, snapshots of ' +
        'its boxes or other blueprints depend on is a 400 naming them.',
    },
  },
};
