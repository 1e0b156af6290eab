import { type Section, section } from '../schema.js';

/** `server:` the API listener: address, port, log level, the first key, request and connection bounds. */
export const SERVER: Section = section('server', 'the API listener: address, port, log level, the first key, request and connection bounds', [
  ['DEVBOXD_HOST', 'string', '`127.0.0.1`', 'address to listen on'],
  ['DEVBOXD_PORT', 'integer', '`4000`', 'one port serving HTTP/1.1 and cleartext HTTP/2 (h2c, prior knowledge); `0` picks a free port'],
  ['DEVBOXD_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], '`info`', 'the pino level of the log (on stdout)'],
  ['DEVBOXD_ADMIN_KEY', 'string', '—', '`ak_...`: created as a standard key of the default account at start (idempotent)', true],
  [
    'DEVBOXD_PUBLIC_URL',
    'string',
    '—',
    'base of presigned object URLs (`https://api.example.com`, a path prefix allowed); unset, the scheme (`X-Forwarded-Proto`, else `http`) and `Host` of the request that asked for the URL',
  ],
  [
    'DEVBOXD_TUNNEL_DOMAIN',
    'string',
    '—',
    'tunnels answer the host names `{port}-{tunnel_key}.tunnel.<this>` (what the SDK\'s `getTunnelUrl` builds for an API at `https://api.<this>`); unset, any `{port}-{tunnel_key}.tunnel.*` host name (see "Tunnels")',
  ],
  ['DEVBOXD_BODY_LIMIT', 'integer', '`10485760`', 'largest JSON body in bytes; larger ones get 413 (file uploads are streamed and not bound by it)'],
  [
    'DEVBOXD_BODY_TIMEOUT_MS',
    'integer',
    '`30000`',
    'a JSON body must arrive within this long after its headers; a client that stalls gets 408 and the connection is closed',
  ],
  [
    'DEVBOXD_HEADERS_TIMEOUT_MS',
    'integer',
    '`15000`',
    "a connection's request headers must be complete within this long of its first byte (its first request: of the connection), on HTTP/1.1 and HTTP/2; late ones get 408 (HTTP/1.1) or a closed session (HTTP/2). Once its headers are in, a request is not bound by it: SSE streams, long-polls and uploads last as long as they need (with their own limits)",
  ],
  [
    'DEVBOXD_PENDING_CONNECTIONS_PER_ADDRESS',
    'integer',
    '`128`',
    "connections from one source address (IPv6: one /64) not yet past their first request's headers; more are closed at once",
  ],
  ['DEVBOXD_PENDING_CONNECTIONS', 'integer', '`1024`', 'such connections from all addresses together; more are closed at once'],
  [
    'DEVBOXD_H2_MAX_RESETS',
    'integer',
    '`200`',
    'streams one HTTP/2 session may see reset (RST_STREAM) in 10 s, at most 900; past it the session gets GOAWAY `ENHANCE_YOUR_CALM` and its connection is closed (the "rapid reset" attack, CVE-2023-44487). An HTTP/2 session without streams is closed (GOAWAY) after 10 minutes idle, an idle HTTP/1.1 keep-alive connection after 65 s (a session closed sooner would race the requests of an SDK client that pauses a minute between calls)',
  ],
]);

/** `cluster:` roles, and how API servers and node agents find and trust each other (see "Roles" and "Nodes"). */
export const CLUSTER: Section = section('cluster', 'roles, and how API servers and node agents find and trust each other (see "Roles" and "Nodes")', [
  [
    'DEVBOXD_ROLE',
    ['all', 'api', 'node'],
    '`all`',
    '`all`: the node agent and the API server on this host, as two processes (see "Roles"); `node`: the node agent alone; `api`: the API server alone, driving the agent at `DEVBOXD_NODE_URL`',
  ],
  [
    'DEVBOXD_CLUSTER_TOKEN',
    'string',
    '`all`: a new one per start',
    '32 to 512 printable characters every RPC call carries; required, and the same, on an API server and its node agent run apart. API servers also sign the requests they forward to each other with a key derived from it: set the same on every server of a cluster (see "Nodes", routing)',
    true,
  ],
  [
    'DEVBOXD_CLUSTER_TOKEN_FILE',
    'string',
    '—',
    'a file holding the cluster token (white space around it dropped), read at start: the token kept out of the environment and the config file',
  ],
  ['DEVBOXD_API_USER', 'string', '`devboxd`', 'the system user the API server runs as under `all`'],
  ['DEVBOXD_NODE_TLS_CERT', 'string', '—', "PEM file: the node agent's TLS certificate on TCP (with `DEVBOXD_NODE_TLS_KEY`)"],
  ['DEVBOXD_NODE_TLS_KEY', 'string', '—', 'PEM file: its private key'],
  [
    'DEVBOXD_CLUSTER_CA',
    'string',
    '—',
    "PEM file: the CA each side checks the other's certificate against (mutual TLS when the API server has a pair); an API server reaching its agent at an `https:` `DEVBOXD_NODE_URL` needs it",
  ],
  ['DEVBOXD_API_TLS_CERT', 'string', '—', "PEM file: the API server's client certificate toward node agents (with `DEVBOXD_API_TLS_KEY`)"],
  ['DEVBOXD_API_TLS_KEY', 'string', '—', 'PEM file: its private key'],
  [
    'DEVBOXD_BOX_SERVICES_DIR',
    'string',
    'under `all`: `/run/devboxd/d-<hash>/boxsvc`',
    'where the API server keeps the per-box box-services sockets the agent relays boxes to (a path both see alike)',
  ],
  [
    'DEVBOXD_NODE_NAME',
    'string',
    'the host name',
    'this server\'s name in a shared database: it records it on the boxes it runs and reconciles only those. On a host shared with other servers it also names this server\'s own nft chains, which hold its boxes to its bandwidth and connection bounds (see "Networking")',
  ],
  [
    'DEVBOXD_NODE_URL',
    'string',
    '`unix:/run/devboxd/d-<hash of the data dir>/node.sock`',
    'where the node agent listens and the API server reaches it: `unix:/path`, `http://host:port` (the token alone) or `https://host:port` (TLS); recorded in the node registry (see "Nodes")',
    'url',
  ],
  [
    'DEVBOXD_API_URL',
    'string',
    '`http://DEVBOXD_HOST:DEVBOXD_PORT` when other hosts reach that address, else none',
    "where other API servers reach this one to forward requests for this node's boxes and the creates and resumes placed on it: `http://` or `https://`, no path; recorded in the node registry. Derived only from a specific address (not `0.0.0.0`, `::`, loopback, link-local or `localhost`) and a set port. Without one, no box is placed on this node by another server, and its boxes answer 503 through other servers",
    'url',
  ],
  ['DEVBOXD_NODE_LEASE_SECONDS', 'integer', '`15`', "how long a renewal of this node's lease holds (1 to 3600); the server renews it every third of it"],
  ['DEVBOXD_NODE_GRACE_SECONDS', 'integer', '`30`', 'how long past its lease this node may be silent before another server declares it lost (0 to 86400)'],
  [
    'DEVBOXD_NODE_CPU_CORES',
    'number',
    "the server's cgroup quota, else its cores",
    'CPU this node offers boxes, in cores (`7.5` allowed), as the registry shows and placement weighs it',
  ],
  ['DEVBOXD_NODE_MEMORY', 'size', "the server's cgroup limit, else the host's memory", 'memory this node offers boxes (`64G`, bytes)'],
  ['DEVBOXD_NODE_DISK', 'size', "the size of the data dir's filesystem", 'disk this node offers boxes (`2T`, bytes)'],
]);
