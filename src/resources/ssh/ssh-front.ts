import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import type { ParsedKey } from 'ssh2';
import type { Logger } from '../../lib/logger.js';
import type { Sandbox } from '../../runtime/driver.js';
import type { SshConfig } from '../../ssh-config.js';
import type { StopListener } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import { loadHostKey, loadTlsPair } from './front-keys.js';
import { devboxIdOf, devboxOfServerName } from './host-name.js';
import type { LoginGuard } from './login-guard.js';
import { serveConnection, type BoxTarget, type ConnectionOptions } from './ssh-connection.js';

export interface SshFrontDeps {
  config: SshConfig;
  /** The effective base domain of the host names (DEVBOXD_SSH_DOMAIN, else DEVBOXD_TUNNEL_DOMAIN), or null: any. */
  domain: string | null;
  dataDir: string;
  devboxById(id: string): Promise<Devbox | undefined>;
  /** The box's live sandbox on this server, or undefined. */
  sandboxOf(id: string): Sandbox | undefined;
  /** The environment the box's processes get (its variables and secrets). */
  environmentOf(d: Devbox): Promise<Record<string, string>>;
  /** Failure budgets of client addresses. */
  guard: LoginGuard;
  /** The key with this public blob issued for the box of this account (create_ssh_key), or undefined. */
  issuedKey(devboxId: string, accountId: string, blob: Buffer): Promise<ParsedKey | undefined>;
  /** Counts an SSH connection as work in the box (+1 at login, -1 at its end): a busy box is never idle. */
  busy(id: string, delta: 1 | -1): void;
  log: Logger;
}

export interface SshAddresses {
  /** Whether TLS connections to the API port are SSH (`takeTls`). */
  api: boolean;
  tls: net.AddressInfo | null;
  plain: net.AddressInfo | null;
}

/**
 * The SSH front: a TLS port whose server name (SNI) picks the box (`<box>.ssh.<domain>`, what
 * create_ssh_key's `url` says and `openssl s_client -servername %h` sends), and optionally a plain SSH port
 * whose user name is the devbox id. Both run an SSH server (ssh2) over the stream. Bounded apart, so
 * strangers never crowd out key holders: connections not yet logged in (DEVBOXD_SSH_MAX_STARTUPS, and
 * DEVBOXD_SSH_MAX_STARTUPS_PER_SOURCE from one address), logged-in ones (DEVBOXD_SSH_MAX_CONNECTIONS, and per
 * box); a short deadline until the client's first SSH byte (DEVBOXD_SSH_IDENT_TIMEOUT_MS, TLS included), a
 * deadline for the whole login, and an idle timeout on session traffic.
 */
export class SshFront {
  private readonly sockets = new Set<net.Socket>();
  /** Connections not yet logged in, by `address:port` (a TLS stream finds its TCP socket so), and per address. */
  private readonly startups = new Map<string, { source: string; ident: NodeJS.Timeout }>();
  private readonly perSource = new Map<string, number>();
  private loggedIn = 0;
  private readonly byBox = new Map<string, Set<() => void>>();
  private readonly servers: net.Server[] = [];
  private hostKey?: ParsedKey;
  /** The TLS server that the API port's TLS connections are handed to (never listening itself). */
  private apiTls?: tls.Server;

  constructor(private readonly deps: SshFrontDeps) {}

  get enabled(): boolean {
    const c = this.deps.config;
    return c.onApiPort || c.port !== null || c.plainPort !== null;
  }

  /**
   * Opens the configured ports (none when SSH is off) and readies the API port's share; the host key and TLS
   * pair are made on first use. Called before the API listens, so no TLS connection arrives unserved.
   */
  async listen(): Promise<SshAddresses> {
    const c = this.deps.config;
    const out: SshAddresses = { api: false, tls: null, plain: null };
    if (!this.enabled) return out;
    const dir = path.join(this.deps.dataDir, 'ssh');
    this.hostKey = await loadHostKey(dir);
    if (c.port !== null || c.onApiPort) {
      const pair = await loadTlsPair(dir, { cert: c.tlsCert, key: c.tlsKey });
      const server = tls.createServer({ ...pair, handshakeTimeout: c.handshakeTimeoutMs, minVersion: 'TLSv1.2' });
      server.on('connection', (raw: net.Socket) => this.accept(raw));
      server.on('secureConnection', (s: tls.TLSSocket) => void this.onTls(s).catch((err) => this.failed(s, err)));
      server.on('tlsClientError', (_err, s) => s.destroy());
      if (c.port !== null) out.tls = await this.open(server, c.port);
      if (c.onApiPort) this.apiTls = server;
      out.api = c.onApiPort;
    }
    if (c.plainPort !== null) {
      const server = net.createServer((raw) => {
        if (this.accept(raw)) this.onPlain(raw);
      });
      out.plain = await this.open(server, c.plainPort);
    }
    return out;
  }

  /**
   * A connection to the API port that opened with a TLS record (HTTP never does): SSH over TLS, as on the
   * port of its own, under the same caps. Refused while SSH on the API port is off or not ready.
   */
  readonly takeTls = (raw: net.Socket): void => {
    if (this.apiTls) this.apiTls.emit('connection', raw);
    else raw.destroy();
  };

  /** The box's processes are gone: its SSH connections end. */
  readonly onStopped: StopListener = (id) => {
    for (const end of this.byBox.get(id) ?? []) end();
  };

  async close(): Promise<void> {
    this.apiTls = undefined;
    for (const s of this.servers) s.close();
    for (const s of this.sockets) s.destroy();
    this.servers.length = 0;
  }

  private open(server: net.Server, port: number): Promise<net.AddressInfo> {
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: this.deps.config.host, port }, () => {
        server.off('error', reject);
        server.on('error', (err) => this.deps.log.error({ err }, 'ssh listener failed'));
        this.servers.push(server);
        resolve(server.address() as net.AddressInfo);
      });
    });
  }

  /** Admits a TCP connection under the pre-auth caps (in total and from its address); false when refused. */
  private accept(raw: net.Socket): boolean {
    const c = this.deps.config;
    const source = raw.remoteAddress ?? '';
    const fromSource = this.perSource.get(source) ?? 0;
    if (this.startups.size >= c.maxStartups || fromSource >= c.maxStartupsPerSource) {
      raw.destroy();
      return false;
    }
    const key = keyOf(raw);
    // Until the client sends its first byte of SSH (after TLS on the TLS port) only the short deadline holds.
    const ident = setTimeout(() => raw.destroy(), c.identTimeoutMs);
    this.startups.set(key, { source, ident });
    this.perSource.set(source, fromSource + 1);
    this.sockets.add(raw);
    raw.setNoDelay(true);
    raw.on('error', () => undefined);
    raw.once('close', () => {
      this.sockets.delete(raw);
      this.leaveStartups(key);
    });
    return true;
  }

  /** The connection is no longer a startup (logged in or gone): its pre-auth slot frees. */
  private leaveStartups(key: string): boolean {
    const slot = this.startups.get(key);
    if (!slot) return false;
    clearTimeout(slot.ident);
    this.startups.delete(key);
    const n = (this.perSource.get(slot.source) ?? 1) - 1;
    if (n > 0) this.perSource.set(slot.source, n);
    else this.perSource.delete(slot.source);
    return true;
  }

  /** Serves SSH on a stream whose login (key exchange and authentication) must end within the deadline. */
  private serve(s: net.Socket, opts: Pick<ConnectionOptions, 'banner' | 'boxFor'>): void {
    s.on('error', () => undefined);
    const deadline = setTimeout(() => s.destroy(), this.deps.config.handshakeTimeoutMs);
    s.once('close', () => clearTimeout(deadline));
    const key = keyOf(s);
    serveConnection(s, {
      ...opts,
      hostKey: this.hostKey!,
      source: s.remoteAddress ?? '',
      guard: this.deps.guard,
      issuedKey: (box, blob) => this.deps.issuedKey(box.id, box.accountId, blob),
      admit: (box, end) => {
        clearTimeout(deadline);
        return this.admit(s, key, box, end);
      },
      idleTimeoutMs: this.deps.config.idleTimeoutSeconds * 1000,
      log: this.deps.log,
    });
    // Attached after ssh2's own reader, so no byte is lost to it.
    s.once('data', () => clearTimeout(this.startups.get(key)?.ident));
  }

  private async onTls(s: tls.TLSSocket): Promise<void> {
    const name = typeof s.servername === 'string' ? s.servername : '';
    const id = devboxOfServerName(name, this.deps.domain);
    // Before a login one message covers an unknown, stopped, suspended or elsewhere box: no id oracle.
    const why = !id
      ? `no devbox is named by the TLS server name "${name}" (expected <devbox>.ssh.<domain>, the url of create_ssh_key)`
      : (await this.reachable(id))
        ? null
        : `devbox ${id} cannot be logged into: no such devbox, or it is not running on this server (a suspended box is resumed with POST /v1/devboxes/${id}/resume)`;
    this.serve(s, {
      banner: why ? `devboxd: ${why}` : undefined,
      boxFor: async (user) => (id && !why ? this.target(id, user) : null),
    });
  }

  /** Plain SSH: the user name is the devbox id (or its label); the box user is implied. */
  private onPlain(s: net.Socket): void {
    this.serve(s, {
      boxFor: async (user) => {
        const id = devboxIdOf(user);
        return id ? this.target(id, null) : null;
      },
    });
  }

  /** Whether the box runs here now. */
  private async reachable(id: string): Promise<boolean> {
    const d = await this.deps.devboxById(id);
    return d?.status === 'running' && this.deps.sandboxOf(id) !== undefined;
  }

  /** The box as a login target for `user` (null: any user, the plain port), or null. */
  private async target(id: string, user: string | null): Promise<BoxTarget | null> {
    const d = await this.deps.devboxById(id);
    const sandbox = this.deps.sandboxOf(id);
    if (!d || d.status !== 'running' || !sandbox) return null;
    if (user !== null && user !== d.sandbox.user.name) return null;
    return { id, accountId: d.accountId, sandbox, environment: () => this.deps.environmentOf(d) };
  }

  /** A logged-in connection leaves the startups: under the logged-in caps, counted as activity of the box until it closes. */
  private admit(socket: net.Socket, key: string, box: BoxTarget, end: () => void): string | null {
    const c = this.deps.config;
    if (this.loggedIn >= c.maxConnections)
      return `this server has ${c.maxConnections} SSH connections open, the most it may (DEVBOXD_SSH_MAX_CONNECTIONS); retry later`;
    const set = this.byBox.get(box.id) ?? new Set<() => void>();
    const max = c.maxConnectionsPerDevbox;
    if (set.size >= max)
      return `devbox ${box.id} has ${max} SSH connections open, the most it may (DEVBOXD_SSH_MAX_CONNECTIONS_PER_DEVBOX); close one and retry`;
    this.leaveStartups(key);
    this.loggedIn++;
    this.byBox.set(box.id, set);
    set.add(end);
    this.deps.busy(box.id, 1);
    socket.once('close', () => {
      this.loggedIn--;
      set.delete(end);
      if (set.size === 0 && this.byBox.get(box.id) === set) this.byBox.delete(box.id);
      this.deps.busy(box.id, -1);
    });
    return null;
  }

  private failed(s: net.Socket, err: unknown): void {
    this.deps.log.error({ err }, 'ssh connection failed');
    s.destroy();
  }
}

/** A TCP connection's name; a TLS stream on it answers the same. */
function keyOf(s: net.Socket): string {
  return `${s.remoteAddress}:${s.remotePort}`;
}
