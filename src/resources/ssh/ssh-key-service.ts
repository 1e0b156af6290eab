import { ERRORS } from '../../platform/errors.js';
import type { DevboxService } from '../devboxes/devbox-service.js';
import { installKey } from './authorized-keys.js';
import { baseDomain, sshHostName } from './host-name.js';
import { newKeyPair } from './key-pair.js';
import type { LoginGuard } from './login-guard.js';

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
  /** The SSH front's key cache: a new key logs in at once, not after the cache's few seconds. */
  guard: LoginGuard;
  /** Whether this server runs an SSH front (DEVBOXD_SSH_PORT or DEVBOXD_SSH_PLAIN_PORT). */
  served: boolean;
  /** DEVBOXD_SSH_DOMAIN, else DEVBOXD_TUNNEL_DOMAIN, else null (from the API's host name). */
  domain: string | null;
}

/**
 * create_ssh_key: an ed25519 pair whose public half is appended to the box user's `~/.ssh/authorized_keys`
 * inside the box. The box's own file is the only record: it goes with the box's disk through suspends and
 * snapshots, and the user can remove a line to revoke a key.
 */
export class SshKeyService {
  constructor(
    private readonly devboxes: DevboxService,
    private readonly opts: SshKeyOptions,
  ) {}

  /** `requestHost` is the API's host name as the client used it (the url's domain when none is configured). */
  async create(accountId: string, id: string, requestHost: string): Promise<SshKey> {
    const { devbox, sandbox } = await this.devboxes.requireRunning(accountId, id);
    if (!this.opts.served) throw ERRORS.badState('this server serves no SSH (set DEVBOXD_SSH_PORT); no key was made');
    const pair = newKeyPair(`devboxd:${devbox.id}`);
    this.devboxes.busy(devbox.id, 1);
    try {
      await installKey(sandbox, pair.public);
      this.opts.guard.invalidate(devbox.id);
    } catch (err) {
      const now = await this.devboxes.get(accountId, id);
      if (now.status !== 'running') throw ERRORS.devboxNotRunning(id, now.status);
      throw ERRORS.badState(`the key could not be installed in ~/.ssh/authorized_keys of devbox ${id}: ${(err as Error).message}`);
    } finally {
      this.devboxes.busy(devbox.id, -1);
    }
    return {
      devboxId: devbox.id,
      privateKey: pair.private,
      user: devbox.sandbox.user.name,
      url: sshHostName(devbox.id, baseDomain(this.opts.domain, requestHost)),
    };
  }
}
