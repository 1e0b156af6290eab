import { type Section, section } from '../schema.js';

/** `ssh:` the SSH front: its ports, names, certificate and connection bounds (see "SSH"). */
export const SSH: Section = section('ssh', 'the SSH front: its ports, names, certificate and connection bounds (see "SSH")', [
  [
    'DEVBOXD_SSH_PORT',
    'port or word',
    '`api`',
    'where SSH over TLS is served (the TLS server name, `<devbox>.ssh.<domain>`, create_ssh_key\'s `url`, picks the box; see "SSH"): `api`, on the API port (connections that open with a TLS handshake); a number, a TLS port of its own instead (`0` picks a free one); `off`, nowhere',
  ],
  ['DEVBOXD_SSH_PLAIN_PORT', 'integer', '— (off)', 'plain SSH port (no TLS) where the user name is the devbox id (`ssh -p PORT dbx_…@host`)'],
  ['DEVBOXD_SSH_HOST', 'string', '`DEVBOXD_HOST`', 'address both SSH ports listen on'],
  [
    'DEVBOXD_SSH_DOMAIN',
    'string',
    '`DEVBOXD_TUNNEL_DOMAIN`',
    "create_ssh_key's `url` is `<devbox>.ssh.<this>`, and the TLS port takes only such names; unset with no tunnel domain either: the API's host name as the client used it, less `api.` (what the SDK's `getTunnelUrl` does), and any `<devbox>.ssh.*` name",
  ],
  [
    'DEVBOXD_SSH_TLS_CERT',
    'string',
    '—',
    "PEM certificate of the TLS port (with `DEVBOXD_SSH_TLS_KEY`); unset, a self-signed P-256 pair made once into `<data>/ssh/` with `openssl` (the SDK's `openssl s_client` ProxyCommand checks none)",
  ],
  ['DEVBOXD_SSH_TLS_KEY', 'string', '—', 'PEM private key of the TLS port; set both or neither'],
  ['DEVBOXD_SSH_MAX_CONNECTIONS', 'integer', '`256`', 'logged-in SSH connections open at once on this server (the next one is told so on stderr and closed)'],
  [
    'DEVBOXD_SSH_MAX_STARTUPS',
    'integer',
    '`64`',
    "SSH connections not yet logged in, at once (sshd's MaxStartups); past it a new one is closed at accept. Strangers count here, never against logged-in users",
  ],
  ['DEVBOXD_SSH_MAX_STARTUPS_PER_SOURCE', 'integer', '`10`', 'connections not yet logged in from one client address, at once (past it closed at accept)'],
  ['DEVBOXD_SSH_IDENT_TIMEOUT_MS', 'integer', '`5000`', 'a connection must finish TLS and send its first SSH byte within this, or it is closed'],
  ['DEVBOXD_SSH_MAX_CONNECTIONS_PER_DEVBOX', 'integer', '`16`', 'logged-in SSH connections to one box; the next one is told so on stderr and closed'],
  ['DEVBOXD_SSH_HANDSHAKE_TIMEOUT_MS', 'integer', '`20000`', 'TLS, SSH key exchange and authentication must end within this, or the connection is closed'],
  [
    'DEVBOXD_SSH_IDLE_TIMEOUT_S',
    'integer',
    '`3600`',
    'a logged-in connection whose sessions move no byte for this long is closed (its commands get SIGHUP, then SIGKILL 2 s later)',
  ],
]);

/** `evictions:` what a stop and memory pressure do to running boxes (see "Evictions"). */
export const EVICTIONS: Section = section('evictions', 'what a stop and memory pressure do to running boxes (see "Evictions")', [
  [
    'DEVBOXD_EVICT_ON_SHUTDOWN',
    ['keep', 'suspend'],
    '`keep`',
    'what SIGTERM does to the boxes: `keep` leaves them running (adopted at the next start); `suspend` drains them first, like `devboxd drain` (see "Evictions")',
  ],
  ['DEVBOXD_EVICT_GRACE_SECONDS', 'integer', '`10`', "time between a drain's announcement on the eviction stream and its suspends"],
  [
    'DEVBOXD_EVICT_SHUTDOWN_TIMEOUT_SECONDS',
    'integer',
    '`60`',
    'how long the SIGTERM drain may take: then the server stops anyway and logs the boxes left running (adopted at the next start)',
  ],
  [
    'DEVBOXD_EVICT_ON_MEMORY_PRESSURE',
    ['on', 'off'],
    '`off`',
    '`on`: suspend boxes while the host is short of memory, as the kernel\'s PSI trigger reports it (see "Evictions")',
  ],
  [
    'DEVBOXD_EVICT_MEMORY_PSI',
    'string',
    '`some 300000 2000000`',
    'the PSI trigger, `some\\|full <stall µs> <window µs>`: here 15 % of a 2 s window spent stalled on memory (windows that are multiples of 2 s are what this kernel takes without `CAP_SYS_RESOURCE`)',
  ],
  [
    'DEVBOXD_EVICT_MEMORY_PSI_FILE',
    'string',
    '`/proc/pressure/memory`',
    "the pressure file the trigger goes on: host-wide, or a cgroup v2 group's `memory.pressure`",
  ],
  [
    'DEVBOXD_EVICT_MEMORY_AVAILABLE_MIN',
    'size',
    '`10%`',
    "a pressure event evicts only while the host's `MemAvailable` is under this (bytes, `512M`, `2G`, or a percentage of the host's memory; `0`: on pressure alone)",
  ],
  ['DEVBOXD_EVICT_MEMORY_GRACE_SECONDS', 'integer', '`5`', "time between a pressure eviction's announcement and its suspend"],
]);

/** `blueprints:` blueprint builds and the services boxes start from them. */
export const BLUEPRINTS: Section = section('blueprints', 'blueprint builds and the services boxes start from them', [
  ['DEVBOXD_BLUEPRINT_BUILDS', 'integer', '`2`', 'blueprint builds running at once; more wait, `queued`'],
  [
    'DEVBOXD_BLUEPRINT_ACCOUNT_BUILDS',
    'integer',
    '`10`',
    'builds one account may have queued or running at once (the build slots are shared in arrival order); a create past it gets 429 with `Retry-After: 10`',
  ],
  ['DEVBOXD_BLUEPRINT_BUILD_TIMEOUT', 'integer', '`3600`', "seconds one build may take; past it its step's box is destroyed and the build fails saying so"],
  [
    'DEVBOXD_SERVICE_READY_TIMEOUT',
    'integer',
    '`300`',
    'seconds a devbox\'s required services have to be pulled, started and listening on their ports; past it the box fails saying which (see "services")',
  ],
  ['DEVBOXD_SERVICE_PULLS', 'integer', '`2`', 'service image pulls running at once, host-wide (more wait, within `DEVBOXD_SERVICE_READY_TIMEOUT`)'],
]);

/** `repositories:` git repositories: where they are fetched from, inspections and code mounts. */
export const REPOSITORIES: Section = section('repositories', 'git repositories: where they are fetched from, inspections and code mounts', [
  [
    'DEVBOXD_GIT_BASE_URL',
    'string',
    '`https://github.com`',
    'repositories (connections, inspections, code mounts) are `<this>/<owner>/<name>`, fetched over git\'s smart HTTP by the server for the box (see "repositories")',
    'url',
  ],
  ['DEVBOXD_REPOSITORY_INSPECTIONS', 'integer', '`2`', 'repository inspections running at once; more wait, `inspection_pending`'],
  ['DEVBOXD_REPOSITORY_INSPECTION_TIMEOUT', 'integer', '`600`', 'seconds one inspection (clone and survey) may take; past it the inspection fails saying so'],
  [
    'DEVBOXD_CODE_MOUNT_TIMEOUT',
    'integer',
    '`900`',
    "seconds a box's code mounts (clones and install commands) may take at boot; past it the box fails saying so",
  ],
]);
