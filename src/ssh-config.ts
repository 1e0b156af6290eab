import fs from 'node:fs';
import { ConfigError } from './platform/config-error.js';

/** The SSH front's settings (part of Config, parsed once at start). */
export interface SshConfig {
  /**
   * DEVBOXD_SSH_PORT unset (or `api`): TLS connections to the API port are SSH (SNI `<box>.ssh.<domain>` names
   * the box), so SSH works with no setting; a number: a TLS port of its own instead; `off`: no TLS SSH.
   */
  onApiPort: boolean;
  /** The TLS port of its own (DEVBOXD_SSH_PORT as a number), or null. */
  port: number | null;
  /** DEVBOXD_SSH_PLAIN_PORT: plain SSH (no TLS) where the user name is the devbox id; null: none. */
  plainPort: number | null;
  /** DEVBOXD_SSH_HOST: address both SSH ports listen on; default DEVBOXD_HOST. */
  host: string;
  /** DEVBOXD_SSH_DOMAIN: `url` of create_ssh_key is `<box>.ssh.<this>`; null: DEVBOXD_TUNNEL_DOMAIN, else the API's host name less `api.`. */
  domain: string | null;
  /** DEVBOXD_SSH_TLS_CERT / DEVBOXD_SSH_TLS_KEY: PEM files of the TLS port; unset, a self-signed pair made once in `<data>/ssh/`. */
  tlsCert: string | null;
  tlsKey: string | null;
  /** DEVBOXD_SSH_MAX_CONNECTIONS: logged-in SSH connections open at once on this server. */
  maxConnections: number;
  /** DEVBOXD_SSH_MAX_STARTUPS: connections not yet logged in, at once (sshd's MaxStartups); past it a new one is closed. */
  maxStartups: number;
  /** DEVBOXD_SSH_MAX_STARTUPS_PER_SOURCE: connections not yet logged in from one address, at once. */
  maxStartupsPerSource: number;
  /** DEVBOXD_SSH_IDENT_TIMEOUT_MS: a connection must send its first SSH byte (TLS done) within this. */
  identTimeoutMs: number;
  /** DEVBOXD_SSH_MAX_CONNECTIONS_PER_DEVBOX: SSH connections open at once to one box. */
  maxConnectionsPerDevbox: number;
  /** DEVBOXD_SSH_HANDSHAKE_TIMEOUT_MS: TLS, SSH key exchange and authentication must finish within this. */
  handshakeTimeoutMs: number;
  /** DEVBOXD_SSH_IDLE_TIMEOUT_S: a connection whose sessions move no byte for this long is closed. */
  idleTimeoutSeconds: number;
}

type Int = (name: string, def: number, min: number, max: number) => number;

/** An optional port: unset or empty is off; `0` picks a free port (tests). */
function port(env: NodeJS.ProcessEnv, name: string, int: Int): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  return int(name, 0, 0, 65535);
}

export function loadSshConfig(env: NodeJS.ProcessEnv, host: string, int: Int): SshConfig {
  const domain = (env.DEVBOXD_SSH_DOMAIN || '').toLowerCase().replace(/\.$/, '') || null;
  if (domain && !/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/.test(domain)) {
    throw new ConfigError(`DEVBOXD_SSH_DOMAIN must be a DNS name (example.com), got "${env.DEVBOXD_SSH_DOMAIN}"`);
  }
  const tlsCert = env.DEVBOXD_SSH_TLS_CERT || null;
  const tlsKey = env.DEVBOXD_SSH_TLS_KEY || null;
  if (!tlsCert !== !tlsKey) throw new ConfigError('DEVBOXD_SSH_TLS_CERT and DEVBOXD_SSH_TLS_KEY go together: set both or neither');
  for (const [name, file] of [
    ['DEVBOXD_SSH_TLS_CERT', tlsCert],
    ['DEVBOXD_SSH_TLS_KEY', tlsKey],
  ] as const) {
    if (file && !fs.existsSync(file)) throw new ConfigError(`${name} names ${file}, which does not exist`);
  }
  const tlsPort = (env.DEVBOXD_SSH_PORT ?? '').trim().toLowerCase();
  return {
    onApiPort: tlsPort === '' || tlsPort === 'api',
    port: tlsPort === '' || tlsPort === 'api' || tlsPort === 'off' ? null : port(env, 'DEVBOXD_SSH_PORT', int),
    plainPort: port(env, 'DEVBOXD_SSH_PLAIN_PORT', int),
    host: env.DEVBOXD_SSH_HOST || host,
    domain,
    tlsCert,
    tlsKey,
    maxConnections: int('DEVBOXD_SSH_MAX_CONNECTIONS', 256, 1, 1_000_000),
    maxStartups: int('DEVBOXD_SSH_MAX_STARTUPS', 64, 1, 1_000_000),
    maxStartupsPerSource: int('DEVBOXD_SSH_MAX_STARTUPS_PER_SOURCE', 10, 1, 1_000_000),
    identTimeoutMs: int('DEVBOXD_SSH_IDENT_TIMEOUT_MS', 5000, 100, 600_000),
    maxConnectionsPerDevbox: int('DEVBOXD_SSH_MAX_CONNECTIONS_PER_DEVBOX', 16, 1, 100_000),
    handshakeTimeoutMs: int('DEVBOXD_SSH_HANDSHAKE_TIMEOUT_MS', 20_000, 100, 600_000),
    idleTimeoutSeconds: int('DEVBOXD_SSH_IDLE_TIMEOUT_S', 3600, 1, 7 * 24 * 3600),
  };
}
