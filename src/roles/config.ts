/**
 * Which part of devboxd a process is (DEVBOXD_ROLE) and how the parts find and trust each other.
 *
 * - `node`: the node agent, root, the only privileged process: the runtime driver behind the RPC.
 * - `api`: the API server, unprivileged: HTTP, auth, store, jobs; its sandboxes are the agent's.
 * - `all` (default, what `npm start` runs): both on this host as separate processes, started and stopped
 *   together by a small supervisor that stays root only to start them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../platform/config-error.js';

export type Role = 'all' | 'api' | 'node';

export interface RolesConfig {
  role: Role;
  /**
   * DEVBOXD_NODE_URL: where the node agent listens and the API server reaches it: `unix:/path` on one host
   * (default `unix:<data>/run/node.sock`), `http://host:port` (the cluster token alone) or `https://host:port`
   * (TLS; mutual with DEVBOXD_CLUSTER_CA) between hosts.
   */
  agent: string;
  /** DEVBOXD_CLUSTER_TOKEN or the file DEVBOXD_CLUSTER_TOKEN_FILE: every RPC call carries it. `all` makes one. */
  token: string | undefined;
  /** DEVBOXD_API_USER: the system user the API server runs as under `all` (made by scripts/setup.sh). */
  apiUser: string;
  /**
   * DEVBOXD_NODE_TLS_CERT / DEVBOXD_NODE_TLS_KEY: the agent's certificate on TCP; DEVBOXD_CLUSTER_CA: the CA
   * both sides check the other against (the API's client certificate: DEVBOXD_API_TLS_CERT / _KEY).
   */
  tls: { cert?: string; key?: string; ca?: string; clientCert?: string; clientKey?: string };
  /** DEVBOXD_BOX_SERVICES_DIR: where the API server's per-box sockets live (a path the agent sees the same). */
  boxServicesDir: string | undefined;
}

const ROLES: readonly Role[] = ['all', 'api', 'node'];

export function loadRolesConfig(env: Readonly<Record<string, string | undefined>>, dataDir: string): RolesConfig {
  const role = (env.DEVBOXD_ROLE || 'all') as Role;
  if (!ROLES.includes(role)) throw new ConfigError(`DEVBOXD_ROLE must be one of ${ROLES.join(', ')}, got "${env.DEVBOXD_ROLE}"`);
  const agent = env.DEVBOXD_NODE_URL || `unix:${path.join(dataDir, 'run', 'node.sock')}`;
  if (!/^(unix:\/|https?:\/\/)/.test(agent)) throw new ConfigError(`DEVBOXD_NODE_URL must be unix:/absolute/path or an http(s):// URL, got "${agent}"`);
  let token = env.DEVBOXD_CLUSTER_TOKEN || undefined;
  if (!token && env.DEVBOXD_CLUSTER_TOKEN_FILE) token = readSecret('DEVBOXD_CLUSTER_TOKEN_FILE', env.DEVBOXD_CLUSTER_TOKEN_FILE).trim();
  if (token !== undefined && !/^[\x21-\x7e]{32,512}$/.test(token)) {
    throw new ConfigError('DEVBOXD_CLUSTER_TOKEN must be 32 to 512 printable characters without spaces (e.g. `openssl rand -hex 32`)');
  }
  if (!token && role !== 'all')
    throw new ConfigError(`DEVBOXD_ROLE=${role} needs DEVBOXD_CLUSTER_TOKEN (or DEVBOXD_CLUSTER_TOKEN_FILE), the same on the API servers and node agents`);
  const apiUser = env.DEVBOXD_API_USER || 'devboxd';
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(apiUser)) throw new ConfigError(`DEVBOXD_API_USER must be a user name, got "${apiUser}"`);
  const file = (name: string) => (env[name] ? readSecret(name, env[name]) : undefined);
  const tls = {
    cert: file('DEVBOXD_NODE_TLS_CERT'),
    key: file('DEVBOXD_NODE_TLS_KEY'),
    ca: file('DEVBOXD_CLUSTER_CA'),
    clientCert: file('DEVBOXD_API_TLS_CERT'),
    clientKey: file('DEVBOXD_API_TLS_KEY'),
  };
  if (!!tls.cert !== !!tls.key) throw new ConfigError('DEVBOXD_NODE_TLS_CERT and DEVBOXD_NODE_TLS_KEY go together');
  if (agent.startsWith('https:') && role !== 'node' && !tls.ca) throw new ConfigError('DEVBOXD_NODE_URL is https: the API server needs DEVBOXD_CLUSTER_CA');
  const boxServicesDir = env.DEVBOXD_BOX_SERVICES_DIR || undefined;
  if (boxServicesDir !== undefined && !path.isAbsolute(boxServicesDir)) throw new ConfigError('DEVBOXD_BOX_SERVICES_DIR must be an absolute path');
  return { role, agent, token, apiUser, tls, boxServicesDir };
}

function readSecret(name: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${name}: cannot read ${file}: ${(err as Error).message}`);
  }
}
