import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Disk snapshots in the API reference (/docs). */
export const snapshotOperations: OperationDocs = {
  tag: 'Snapshots',
  operations: {
    'POST /v1/devboxes/{id}/snapshot_disk_async': {
      sdk: ['devboxes.snapshotDiskAsync'],
      summary: 'Start a disk snapshot',
      description:
        "Starts copying a running devbox's disk into a snapshot and answers at once with it `in_progress`; `…/status` follows it. " +
        'A box that is not running is a 400, one with a snapshot already being taken a 409. Needs devbox read besides snapshot write.',
    },
    'POST /v1/devboxes/{id}/snapshot_disk': {
      sdk: ['devboxes.snapshotDisk'],
      summary: 'Take a disk snapshot',
      description:
        'Starts a snapshot as `snapshot_disk_async` does and holds the request up to 25 s for it to complete; a snapshot still being ' +
        'copied then is answered `in_progress`. New devboxes boot from it with `snapshot_id`.',
    },
    'GET /v1/devboxes/disk_snapshots': {
      sdk: ['devboxes.listDiskSnapshots', 'devboxes.diskSnapshots.list'],
      summary: 'List disk snapshots',
      description:
        "The account's snapshots in cursor pages, filtered by `devbox_id`, `source_blueprint_id` and metadata (`metadata[k]=v`, " + '`metadata[k][in]=v1,v2`).',
    },
    'GET /v1/devboxes/disk_snapshots/{id}': {
      own: 'devboxes.diskSnapshots.retrieve',
      summary: 'Get a disk snapshot',
      description: 'One snapshot of the account, by id.',
    },
    'POST /v1/devboxes/disk_snapshots/{id}': {
      sdk: ['devboxes.diskSnapshots.update'],
      summary: "Update a snapshot's name, metadata or commit message",
      description: 'A field left out or null stays as it is; metadata given replaces the stored map whole.',
    },
    'GET /v1/devboxes/disk_snapshots/{id}/status': {
      sdk: ['devboxes.diskSnapshots.queryStatus'],
      summary: "Get a snapshot's progress",
      description: 'Whether the snapshot is still being taken, complete, or failed (with `error_message`), with the snapshot.',
    },
    'POST /v1/devboxes/disk_snapshots/{id}/delete': {
      sdk: ['devboxes.deleteDiskSnapshot', 'devboxes.diskSnapshots.delete'],
      summary: 'Delete a disk snapshot',
      description: 'Deletes the snapshot; its layers go once no devbox, blueprint or other snapshot uses them. A snapshot still being taken is a 409.',
    },
  },
};
