import ssh2, { type ParsedKey } from 'ssh2';
import type { Logger } from '../../lib/logger.js';
import { ERRORS } from '../../platform/errors.js';
import type { DevboxService } from '../devboxes/index.js';
import type { StopListener } from '../devboxes/index.js';
import { baseDomain, sshHostName } from './host-name.js';
import { newKeyPair } from './key-pair.js';
import { fingerprintOf, type SqlSshKeyStore } from './sql-ssh-key-store.js';

/** A key made for a box: the private half goes to the client once and is kept nowhere. */
export interface SshKey {
  devboxId: string;
  /** OpenSSH private key (PEM armour). */
  privateKey: string;
  /** The box user: the one the key logs in as. */
  user: string;
  /** The host name that names the box on the SSH front (the TLS server name). */
  url: string;
}

export interface SshKeyOptions {
  /** Whether this server runs an SSH front (on the API port, DEVBOXD_SSH_PORT or DEVBOXD_SSH_PLAIN_PORT). */
  served: boolean;
  /** DEVBOXD_SSH_DOMAIN, else DEVBOXD_TUNNEL_DOMAIN, else null (from the API's host name). */
  domain: string | null;
  log: Logger;
}

/**
 * create_ssh_key and the keys the SSH front trusts: an ed25519 pair per call whose public half is recorded
 * server-side for that box and its account (devbox_ssh_keys), never written into the box. Nothing in the
 * box (its `authorized_keys`, an image's or a blueprint's) grants a login; a key issued for one box opens
 * no other, and a box made from a snapshot of it starts with none. Keys last through suspends, resumes and
 * server restarts, and go when the box ends.
 */
export class SshKeyService {
  constructor(
    private readonly devboxes: () => DevboxService,
    private readonly keys: SqlSshKeyStore,
    private readonly opts: SshKeyOptions,
  ) {}

  /** `requestHost` is the API's host name as the client used it (the url's domain when none is configured). */
  async create(accountId: string, id: string, requestHost: string): Promise<SshKey> {
    const devbox = await this.devboxes().get(accountId, id);
    if (devbox.status !== 'running') throw ERRORS.devboxNotRunning(devbox.id, devbox.status);
    if (!this.opts.served) throw ERRORS.badState('this server serves no SSH (DEVBOXD_SSH_PORT=off and no DEVBOXD_SSH_PLAIN_PORT); no key was made');
    const pair = newKeyPair(`devboxd:${devbox.id}`);
    const parsed = ssh2.utils.parseKey(pair.public) as ParsedKey;
    await this.keys.insert({
      devbox_id: devbox.id,
      account_id: devbox.accountId,
      fingerprint: fingerprintOf(parsed.getPublicSSH()),
      public_key: pair.public,
      create_time_ms: Date.now(),
    });
    return {
      devboxId: devbox.id,
      privateKey: pair.private,
      user: devbox.sandbox.user.name,
      url: sshHostName(devbox.id, baseDomain(this.opts.domain, requestHost)),
    };
  }

  /** The key with this public blob issued for this box of this account, parsed; undefined for any other. */
  async issued(devboxId: string, accountId: string, blob: Buffer): Promise<ParsedKey | undefined> {
    const row = await this.keys.find(devboxId, accountId, fingerprintOf(blob));
    if (!row) return undefined;
    const key = ssh2.utils.parseKey(row.public_key);
    return key instanceof Error || Array.isArray(key) || !key.getPublicSSH().equals(blob) ? undefined : key;
  }

  /** A box that ended can never run again: its keys go (a suspended box keeps them). */
  readonly onStopped: StopListener = (id, ended) => {
    if (!ended) return;
    this.keys.removeDevbox(id).catch((err) => this.opts.log.warn({ err, devbox: id }, 'ssh keys of an ended box were not removed'));
  };
}
