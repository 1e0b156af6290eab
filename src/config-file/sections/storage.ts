import { type Section, section } from '../schema.js';

/** `storage:` where state lives: the data dir, the database, the master key, the blob store, execution output (see "Storage"). */
export const STORAGE: Section = section(
  'storage',
  'where state lives: the data dir, the database, the master key, the blob store, execution output (see "Storage")',
  [
    [
      'DEVBOXD_DATA_DIR',
      'string',
      '`./data`',
      "the node agent's base images, layers and devbox disks; under `api/` (the API user's) the database, blobs, execution output, SSH host keys, master key and the axon SQL runtime files. A data dir of an older devboxd has its API files moved under `api/` at first start",
    ],
    ['DEVBOXD_IMAGE_DIR', 'string', '`$DEVBOXD_DATA_DIR/images`', 'cache of built base images (share it between data dirs to build once)'],
    [
      'DEVBOXD_DATABASE_URL',
      'string',
      '— (SQLite in the data dir)',
      '`postgres://user@host:port/db`: keep the state in PostgreSQL instead, which several servers may share',
      'url',
    ],
    [
      'DEVBOXD_SECRET_KEY',
      'string',
      '— (`<data>/secret.key`)',
      "base64 of the 32-byte master key secret values are sealed under (`openssl rand -base64 32`); unset, the key file is used, created at first start (mode 0600; a server warns at start when the file is readable by group or others or not owned by its uid). The key file sits in the data dir beside the database: **keep it out of data-dir backups** (a backup holding both holds the values), or use this variable and keep the key elsewhere. Servers sharing PostgreSQL must all have the same key: set this variable on each (a server started with another key logs an error at start naming the key ids it lacks, and a box's command whose secret it cannot open does not start: exit 126, stderr naming the variable and the secret)",
      true,
    ],
    [
      'DEVBOXD_SECRET_KEY_PREVIOUS',
      'list',
      '—',
      'comma-separated further master keys, only for opening values (the next key before the switch, the old one after it; see `secrets rotate-key`)',
      true,
    ],
    [
      'DEVBOXD_BLOB_BACKEND',
      ['fs', 's3'],
      '`fs`',
      'where large immutable bytes (sealed execution output, objects) live: `fs` files under `<data>/blobs`, `s3` a bucket of an S3-protocol server (AWS S3, MinIO, Ceph, …; see "Storage"). A bucket the server cannot use stops its start with the reason (unreachable, no such bucket, access denied)',
    ],
    ['DEVBOXD_S3_ENDPOINT', 'string', '— (AWS S3 of the region)', '`http(s)://host[:port]` of the S3-protocol server', 'url'],
    ['DEVBOXD_S3_BUCKET', 'string', '— (required with `s3`)', 'an existing bucket; devboxd never creates one'],
    ['DEVBOXD_S3_REGION', 'string', '`us-east-1`', 'the region requests are signed for'],
    ['DEVBOXD_S3_ACCESS_KEY_ID', 'string', "— (the AWS SDK's default credential chain)", 'the id of the key pair; set both or neither', true],
    ['DEVBOXD_S3_SECRET_ACCESS_KEY', 'string', "— (the AWS SDK's default credential chain)", 'the secret of the key pair', true],
    [
      'DEVBOXD_S3_PREFIX',
      'string',
      '—',
      "every key is stored under `<prefix>/`, so one bucket can hold several servers' blobs. Servers that do not share one database need a prefix each: at start a server removes the stored execution output of boxes its database does not know",
    ],
    [
      'DEVBOXD_S3_FORCE_PATH_STYLE',
      'boolean',
      '`true` with an endpoint, else `false`',
      '`true`: `http://host/bucket/key` (most self-hosted servers); `false`: `http://bucket.host/key` (AWS)',
    ],
    [
      'DEVBOXD_S3_READS',
      'integer',
      '`64`',
      'S3 reads streaming at once (downloads, object mounts, execution output): each holds a socket of a read pool of its own, from its GET until its reader finished or was cut off (a client that stops reading is cut after 60 s), so readers never take the sockets of uploads and bookkeeping',
    ],
    [
      'DEVBOXD_S3_READ_QUEUE',
      'integer',
      '`256`',
      'further reads that wait for one of those, oldest first, up to 30 s (then 503 saying so); past the queue a read gets 429 with `Retry-After: 1`',
    ],
    [
      'DEVBOXD_LAYER_BLOBS',
      ['auto', 'on', 'off'],
      '`auto`',
      'whether snapshot and blueprint layers are copied to the blob store once made, so boxes boot from them on any node sharing the database (see "Layers between nodes"): `auto` copies when `DEVBOXD_BLOB_BACKEND=s3` (every node reaches the bucket; the local-files store is one node\'s own, where a copy only doubles the disk a layer takes), `on` copies to either, `off` copies nothing. A layer a node lacks is fetched from the blob store whatever this says',
    ],
    [
      'DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES',
      'integer',
      '`67108864` (64 MiB)',
      'output kept per stream (stdout, stderr) of one execution: its first eighth and the most recent bytes',
    ],
    [
      'DEVBOXD_EXECUTION_OUTPUT_BOX_MAX_BYTES',
      'integer',
      '4 × the above (256 MiB)',
      'output kept for all executions of one box; past it the output of finished executions goes, oldest first',
    ],
    [
      'DEVBOXD_EXECUTION_OUTPUT_RETENTION',
      'integer',
      '`0`',
      'seconds execution output outlives its box (`0`: removed as the box ends in `shutdown` or `failure`)',
    ],
  ],
);

/** `objects:` storage objects: sizes, quotas, uploads and mounts into boxes. */
export const OBJECTS: Section = section('objects', 'storage objects: sizes, quotas, uploads and mounts into boxes', [
  [
    'DEVBOXD_OBJECT_MAX_BYTES',
    'integer',
    '`17179869184` (16 GiB)',
    'largest storage object an upload stores; a PUT past it gets 413 as soon as the bytes pass it, and nothing is kept',
  ],
  [
    'DEVBOXD_OBJECT_ACCOUNT_MAX_BYTES',
    'integer',
    '`68719476736` (64 GiB)',
    "most bytes one account's storage objects hold together (completed, and uploaded but not yet completed); a PUT past what is left gets 413 naming it, and nothing is kept",
  ],
  [
    'DEVBOXD_OBJECT_ACCOUNT_MAX_OBJECTS',
    'integer',
    '`10000`',
    'most storage objects one account holds at once (any state but deleted); a create past it gets 403 naming it',
  ],
  [
    'DEVBOXD_OBJECT_UPLOADS_MAX',
    'integer',
    '`64`',
    'object uploads (PUTs) in flight on one server at once; one more gets 429 with `Retry-After` (one upload per object at a time: a second PUT while one runs gets 409)',
  ],
  ['DEVBOXD_OBJECT_UPLOAD_IDLE_MS', 'integer', '`60000`', 'an object upload whose body sends nothing this long is cut off with 400, and nothing is kept'],
  [
    'DEVBOXD_OBJECT_MOUNT_MAX_BYTES',
    'integer',
    '`8589934592` (8 GiB)',
    "most bytes an archive mounted into a box (`object_mount`) may unpack to, counted as written (the box's disk bounds it too)",
  ],
  ['DEVBOXD_OBJECT_MOUNT_MAX_ENTRIES', 'integer', '`100000`', 'most files, directories and links such an archive may hold'],
  [
    'DEVBOXD_OBJECT_MOUNT_TIMEOUT',
    'integer',
    '`900`',
    "seconds placing a box's object mounts may take in all (fetching, unpacking); past it the placing process is killed and the box ends in `failure` saying so",
  ],
]);
