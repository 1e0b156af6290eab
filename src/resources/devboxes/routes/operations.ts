import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** The devbox routes in the API reference (/docs): ids after the official SDK's methods, summaries, section. */
export const devboxOperations: OperationDocs = {
  tag: 'Devboxes',
  operations: {
    'POST /v1/devboxes': {
      sdk: ['devboxes.create'],
      summary: 'Create a devbox',
      description:
        'Creates a devbox from the default image, a blueprint (`blueprint_id`, `blueprint_name`) or a disk snapshot (`snapshot_id`) and starts ' +
        'booting it. Answers at once, with the box still booting (`provisioning`); `wait_for_status` waits for `running`.',
    },
    'POST /v1/devboxes/create_and_await_running': {
      sdk: ['devboxes.createAndAwaitRunning'],
      summary: 'Create a devbox and wait for it to run',
      description:
        'Creates a devbox as `POST /v1/devboxes` does, then holds the request up to 20 s until the box is `running` (or has failed or ended). ' +
        'Always a 200 with the view as it is then, never a timeout, which a client would retry by creating a second box; the SDK goes on ' +
        'waiting while the box still boots.',
    },
    'GET /v1/devboxes': {
      sdk: ['devboxes.list'],
      summary: 'List devboxes',
      description: "The account's devboxes in cursor pages (`limit`, `starting_after`), optionally only those with one `status`.",
    },
    'GET /v1/devboxes/{id}': {
      sdk: ['devboxes.retrieve'],
      summary: 'Get a devbox',
      description:
        "The devbox's current view: status and its transitions, launch parameters, tunnel, gateways and MCP servers. A key with devbox read " +
        'but not write sees an authenticated tunnel without its `auth_token`.',
    },
    'POST /v1/devboxes/{id}': {
      sdk: ['devboxes.update'],
      summary: "Update a devbox's name or metadata",
      description: 'A field left out or null stays as it is; `""` clears the name and `{}` the metadata.',
    },
    'POST /v1/devboxes/{id}/wait_for_status': {
      sdk: ['devboxes.awaitRunning', 'devboxes.awaitSuspended'],
      summary: 'Wait for a devbox status (long-poll)',
      description:
        'Holds the request until the devbox reaches one of `statuses` and answers its view. After `timeout_seconds` (default 10, at most 30) ' +
        'it answers 408, and the SDK asks again at once. A client that disconnects ends the wait.',
    },
    'GET /v1/devboxes/{id}/usage': {
      sdk: ['devboxes.retrieveResourceUsage'],
      summary: "Get a devbox's resource usage",
      description:
        "Seconds elapsed and running, vCPU-seconds and memory and disk GB-seconds over the box's life, and its memory and CPU counters " +
        'while it runs. Time suspended counts towards disk only.',
    },
    'POST /v1/devboxes/{id}/shutdown': {
      sdk: ['devboxes.shutdown'],
      summary: 'Shut a devbox down',
      description:
        'Ends the box for good: its processes stop and its disk goes (snapshot or suspend first to keep it). A box with a snapshot being ' +
        'taken is a 409 unless `force=true`. Shutting down a box that has ended answers its view.',
    },
    'POST /v1/devboxes/{id}/keep_alive': {
      sdk: ['devboxes.keepAlive'],
      summary: "Reset a devbox's idle and keep-alive timers",
      description: 'Counts as activity: a box with `after_idle` or `keep_alive_time_seconds` starts counting again from now.',
    },
    'POST /v1/devboxes/{id}/suspend': {
      sdk: ['devboxes.suspend'],
      summary: 'Suspend a devbox',
      description:
        'Stops a running box and keeps its disk, so that `resume` brings it back (running processes and memory are not kept). Answers at ' +
        "once with status `suspending`; the SDK's `awaitSuspended` waits for `suspended`. A box that is not running is a 400.",
    },
    'POST /v1/devboxes/{id}/resume': {
      sdk: ['devboxes.resume'],
      summary: 'Resume a suspended devbox',
      description:
        'Boots a suspended box again on its kept disk, on whichever node has room. Answers at once with status `resuming`; ' +
        '`wait_for_status` waits for `running`. A box that is not suspended is a 400.',
    },
  },
};
