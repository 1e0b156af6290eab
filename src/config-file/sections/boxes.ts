import { type Section, section } from '../schema.js';

/** `boxes:` what one devbox may have and run: size bounds, warm pools, executions, PTY sessions, agent installs. */
export const BOXES: Section = section('boxes', 'what one devbox may have and run: size bounds, warm pools, executions, PTY sessions, agent installs', [
  [
    'DEVBOXD_WARM_POOL',
    'integer',
    '`2` (`4` on more than 4 cores)',
    'boxes of the default image and size (`SMALL`) kept booted on this node for the creates that match (see "Warm pools"); `0` keeps none. `devboxd pools set` overrides it and sets other sizes',
  ],
  ['DEVBOXD_MAX_CPU_CORES', 'integer', "the host's cores", 'most CPU one devbox may ask for; a bigger size is a 400 (set it higher to overcommit)'],
  ['DEVBOXD_MAX_MEMORY_GB', 'integer', "the host's memory, GiB", 'most memory one devbox may ask for; a bigger size is a 400 (set it higher to overcommit)'],
  [
    'DEVBOXD_BOX_SERVICES_PORT',
    'integer',
    '`1023`',
    'port on `127.0.0.1` inside every box where the box services (MCP hub, agent gateway) answer; below 1024 so no tenant, box root included, can bind it (see "Box services")',
  ],
  [
    'DEVBOXD_MAX_EXECUTIONS_PER_DEVBOX',
    'integer',
    '`256`',
    'executions one devbox runs (or queues on a shell) at once; past it `execute`/`execute_async` get 429 with `Retry-After`',
  ],
  [
    'DEVBOXD_MAX_EXECUTIONS',
    'integer',
    '`4096`',
    'commands all devboxes run at once (one host relay process each); past it a command ends at once with exit status 125 and a stderr line',
  ],
  ['DEVBOXD_PTY_IDLE_TTL', 'integer', '`600`', 'seconds a PTY session (its shell) outlives its last client (see "PTY sessions" below)'],
  [
    'DEVBOXD_PTY_PING_INTERVAL',
    'integer',
    '`30`',
    'seconds between WebSocket pings of an attached PTY client; one left unanswered by the next ping drops the client (the session stays, for its next one)',
  ],
  [
    'DEVBOXD_AGENT_INSTALL_TIMEOUT',
    'integer',
    '`600`',
    "seconds all of a box's `agent_mount`s together may take to install (object placement and `agent_setup` commands included); past it the running install is killed and the box fails saying so",
  ],
]);

/** `network:` boxes' network and egress, and what the server itself may connect to for a tenant (see "Networking"). */
export const NETWORK: Section = section('network', 'boxes\' network and egress, and what the server itself may connect to for a tenant (see "Networking")', [
  [
    'DEVBOXD_NETWORK',
    ['on', 'off'],
    '`on`',
    '`on`: every box gets a network link (`eth0`) under its network policy (see "Networking"); `off`: boxes have a loopback only',
  ],
  [
    'DEVBOXD_DEFAULT_EGRESS',
    ['allow', 'deny'],
    '`allow`',
    'what a box created without `network_policy_id` reaches: `allow` the public internet (not private ranges), `deny` nothing (names do not resolve)',
  ],
  [
    'DEVBOXD_BOX_SUBNET',
    'string',
    '`10.88.0.0/16`',
    "IPv4 network (/16 or larger) each box's /31 link is carved from, by its host id-range slot (unique host-wide)",
  ],
  [
    'DEVBOXD_EGRESS_DENY',
    'list',
    '`169.254.0.0/16,100.64.0.0/10`',
    "comma-separated CIDRs no box reaches whatever its policy, beside the built-in floor (loopback, link-local with the metadata address, 100.64.0.0/10, Azure's 168.63.129.16, 192.0.0.0/24, multicast and reserved, the box subnet, the private ranges but what `DEVBOXD_EGRESS_PRIVATE_ALLOW` opens, the host's own addresses and the networks of every host interface, re-read at each box boot)",
  ],
  [
    'DEVBOXD_EGRESS_OPEN_INTERFACES',
    'list',
    '—',
    "comma-separated host interfaces whose networks are left out of the floor (a policy's CIDR may then open them, where they are public or `DEVBOXD_EGRESS_PRIVATE_ALLOW` opened them; the interface's own address stays refused)",
  ],
  [
    'DEVBOXD_EGRESS_PRIVATE_ALLOW',
    'list',
    '— (nothing)',
    'comma-separated IPv4 CIDRs inside the private ranges (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16; anything else stops the start) that a policy\'s `allowed_cidrs` may open for boxes; every other private address is in the floor, whatever a policy says (its view names what stays closed: `closed_cidrs`). The shared range 100.64.0.0/10, link-local and the rest of the floor stay closed; boxes have no IPv6 (see "Networking")',
  ],
  ['DEVBOXD_DNS_UPSTREAM', 'string', "the host's first `nameserver`", "`address[:port]` the boxes' DNS forwarder asks"],
  [
    'DEVBOXD_BOX_BANDWIDTH_MBIT',
    'integer',
    '`1000`',
    'megabits per second one box may send, and receive (past it packets drop). Per node: with several servers on one host, each one\'s bound holds its own boxes (nft chains of its own, keyed by `DEVBOXD_NODE_NAME`; see "Networking")',
  ],
  [
    'DEVBOXD_BOX_MAX_CONNECTIONS',
    'integer',
    '`1024`',
    'connections one box may hold open at once (past it new ones are refused); per node, like the bandwidth bound',
  ],
  ['DEVBOXD_MIRRORS', 'list', '—', 'comma-separated host names (`*.` wildcards) of package mirrors: what `allow_runloop_mirrors` opens'],
  [
    'DEVBOXD_OUTBOUND_ALLOW',
    'list',
    '— (nothing)',
    "comma-separated host names and CIDRs (IPv4 or IPv6; a bare address is its /32 or /128) the server may connect to on a tenant's behalf although the outbound guard refuses them: loopback, link-local, private, shared, special-purpose, the host's own addresses and the box subnet (see \"Outbound guard\"). A name opens whatever it resolves to; `127.0.0.1` opens upstreams, registries and git servers on the host's loopback",
  ],
]);

/** `registry:` the container registries blueprint and service images are pulled from (see "Registry images"). */
export const REGISTRY: Section = section('registry', 'the container registries blueprint and service images are pulled from (see "Registry images")', [
  [
    'DEVBOXD_REGISTRY_DEFAULT',
    'string',
    '`docker.io`',
    'registry of image references that name none (`python:3.12`); Docker Hub\'s one-word names get `library/` (see "Registry images")',
  ],
  [
    'DEVBOXD_REGISTRY_INSECURE',
    'list',
    '—',
    'comma-separated `host` or `host:port` registries reached over plain http (their token realms and blob redirects too); every other registry, realm and redirect must be https',
  ],
  [
    'DEVBOXD_REGISTRY_ALLOW',
    'list',
    '— (any)',
    "comma-separated `host` or `host:port` registries (a host alone: any of its ports) that blueprint `FROM` and service images may be pulled from, beside `DEVBOXD_REGISTRY_DEFAULT` and the insecure ones; any other is refused before a request reaches it (the build or the box fails naming the variable), so a tenant's image reference cannot make the server probe other hosts. Their token realms and blob redirects follow from them",
  ],
  [
    'DEVBOXD_REGISTRY_MAX_LAYER_BYTES',
    'integer',
    '`8589934592` (8 GiB)',
    'largest layer blob (compressed) an image may have; a bigger one fails the pull before it is fetched',
  ],
  [
    'DEVBOXD_REGISTRY_MAX_UNPACKED_BYTES',
    'integer',
    '`34359738368` (32 GiB)',
    'largest layer once decompressed (its tar stream): a compression bomb fails the pull at that many bytes',
  ],
]);
