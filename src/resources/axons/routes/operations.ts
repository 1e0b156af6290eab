import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Axons (beta) in the API reference (/docs). */
export const axonOperations: OperationDocs = {
  tag: 'Axons',
  operations: {
    'POST /v1/axons': {
      sdk: ['axons.create'],
      summary: 'Create an axon',
      description: 'An axon (beta): an event stream with a name and metadata, and a SQLite database of its own for `sql/query` and `sql/batch`.',
    },
    'GET /v1/axons': {
      sdk: ['axons.list'],
      summary: 'List axons',
      description: "The account's axons that are not deleted, in cursor pages; `id`, `name` (a prefix), `search` and metadata filter.",
    },
    'GET /v1/axons/{id}': {
      sdk: ['axons.retrieve'],
      summary: 'Get an axon',
      description: 'One axon of the account; a deleted one shows `deleted_at_ms`.',
    },
    'POST /v1/axons/{id}': {
      sdk: ['axons.update'],
      summary: "Update an axon's metadata",
      description: 'Metadata left out or null stays as it is; `{}` clears it. A deleted axon is a 400.',
    },
    'DELETE /v1/axons/{id}': {
      sdk: ['axons.delete'],
      summary: 'Delete an axon',
      description: 'Marks the axon deleted and drops its events and SQL database; its open streams end with a 404 error event.',
    },
    'POST /v1/axons/{id}/publish': {
      sdk: ['axons.publish'],
      summary: 'Publish an event',
      description:
        'Appends an event (`event_type`, `origin`, `source`, a text `payload` up to 256 KiB) and answers its `sequence`, 1 up per axon. ' +
        'The newest 10 000 events are kept.',
    },
    'GET /v1/axons/{id}/events': {
      sdk: ['axons.events.list'],
      summary: "List an axon's events",
      description: 'The kept events, newest first, in cursor pages (`starting_after` is a sequence).',
    },
    'GET /v1/axons/{id}/subscribe/sse': {
      sdk: ['axons.subscribeSse'],
      summary: "Subscribe to an axon's events (SSE)",
      description:
        'Server-sent events, each with `id: <sequence>`: the kept events after `after_sequence` (or `Last-Event-ID`), then live ones, in ' +
        'order. A subscriber that falls behind is ended with an error event of code 408 naming where to resume, which the SDK does by itself.',
    },
    'POST /v1/axons/{id}/sql/query': {
      sdk: ['axons.sql.query'],
      summary: "Run a SQL statement on an axon's database",
      description:
        "One statement with `?` parameters on the axon's own SQLite database, in a sandboxed process, within 5 s; rows up to 1000 or 4 MiB. " +
        'ATTACH, PRAGMA, VACUUM and the like are a 400.',
    },
    'POST /v1/axons/{id}/sql/batch': {
      sdk: ['axons.sql.batch'],
      summary: 'Run SQL statements in one transaction',
      description: 'Several statements as one transaction: when one fails, it carries the error, the ones after it say they did not run, and nothing is kept.',
    },
  },
};
