import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Storage objects in the API reference (/docs). */
export const objectOperations: OperationDocs = {
  tag: 'Objects',
  operations: {
    'POST /v1/objects': {
      sdk: ['objects.create'],
      summary: 'Create an object',
      description:
        'Creates an object in `UPLOADING` and answers an `upload_url`: a presigned PUT of the raw bytes that needs no API key, valid for an ' +
        'hour. `complete` then makes it readable. With `ttl_ms` the object is deleted that long after its creation. A retry with the same ' +
        '`x-request-id` answers the same object and URL.',
    },
    'GET /v1/objects': {
      sdk: ['objects.list'],
      summary: 'List objects',
      description: "The account's objects in cursor pages, with filters by name, content type, state and search.",
    },
    'GET /v1/objects/list_public': {
      sdk: ['objects.listPublic'],
      summary: 'List public objects',
      description: 'Objects the operator published, of every account, in cursor pages.',
    },
    'GET /v1/objects/{id}': {
      sdk: ['objects.retrieve'],
      summary: 'Get an object',
      description: 'One object the account can read: its own, or a public one.',
    },
    'POST /v1/objects/{id}/complete': {
      sdk: ['objects.complete'],
      summary: "Complete an object's upload",
      description:
        'Marks the uploaded bytes final: the object becomes `READ_ONLY` with its `size_bytes`. No bytes yet is a 400; an object not ' + '`UPLOADING` a 409.',
    },
    'POST /v1/objects/{id}/delete': {
      sdk: ['objects.delete'],
      summary: 'Delete an object',
      description: 'Deletes the object and its bytes, and answers its last view; its presigned URLs stop working.',
    },
    'GET /v1/objects/{id}/download': {
      sdk: ['objects.download'],
      summary: 'Get a download URL for an object',
      description:
        'A presigned `download_url` that needs no API key, valid for `duration_seconds` (default 3600, at most 7 days); it streams the ' +
        'bytes and serves one `Range`.',
    },
  },
};
