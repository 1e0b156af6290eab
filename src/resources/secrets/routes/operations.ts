import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Secrets in the API reference (/docs). */
export const secretOperations: OperationDocs = {
  tag: 'Secrets',
  operations: {
    'POST /v1/secrets': {
      sdk: ['secrets.create'],
      summary: 'Create a secret',
      description:
        'Stores `value` (1 byte to 64 KiB) under `name`, an environment-variable name unique in the account, sealed under the master key. ' +
        'Devboxes get it as an environment variable through `secrets` at create; no answer ever shows the value.',
    },
    'GET /v1/secrets': {
      sdk: ['secrets.list'],
      summary: 'List secrets',
      description: "The account's secrets, without their values.",
    },
    'GET /v1/secrets/{name}': {
      sdk: ['secrets.retrieve'],
      summary: 'Get a secret',
      description: 'A secret by name, without its value.',
    },
    'POST /v1/secrets/{name}': {
      sdk: ['secrets.update'],
      summary: "Change a secret's value",
      description: 'Replaces the value; processes that start afterwards in boxes bound to the secret get the new one.',
    },
    'POST /v1/secrets/{name}/delete': {
      sdk: ['secrets.delete'],
      summary: 'Delete a secret',
      description: 'Deletes the secret by name and answers its view.',
    },
  },
};
