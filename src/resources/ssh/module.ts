import type { Module } from '../../host.js';
import { devboxesModule } from '../devboxes/index.js';
import { LoginGuard } from './login-guard.js';
import { sshRoutes } from './routes/index.js';
import { SSH_KEYS_SCHEMA } from './schema.js';
import { SqlSshKeyStore } from './sql-ssh-key-store.js';
import { SshFront } from './ssh-front.js';
import { SshKeyService } from './ssh-key-service.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    /** SSH: create_ssh_key (keys) and the SSH front on its own ports (front.listen() at start). */
    ssh: { keys: SshKeyService; front: SshFront };
  }
}

/** SSH into boxes: per-box keys, and the SSH front (TLS on the API port, or ports of its own). */
export const sshModule: Module = {
  name: 'ssh',
  needs: [devboxesModule],
  schema: SSH_KEYS_SCHEMA,
  build({ host, use }) {
    const { config } = host;
    const devboxes = use('devboxes');
    const lifecycle = use('lifecycle');
    const log = host.logger.child({ component: 'ssh' });
    const domain = config.ssh.domain ?? config.tunnelDomain;
    const keys = new SshKeyService(() => devboxes, new SqlSshKeyStore(host.store.db), {
      served: config.ssh.onApiPort || config.ssh.port !== null || config.ssh.plainPort !== null,
      domain,
      log,
    });
    const front = new SshFront({
      config: config.ssh,
      domain,
      dataDir: config.dataDir,
      devboxById: (id) => host.store.devboxes.getById(id),
      sandboxOf: (id) => lifecycle.active.get(id)?.sandbox,
      environmentOf: (d) => devboxes.environmentOf(d),
      guard: new LoginGuard(),
      issuedKey: (id, accountId, blob) => keys.issued(id, accountId, blob),
      busy: (id, delta) => devboxes.busy(id, delta),
      log,
    });
    // TLS connections to the API port are SSH (its own ports, if configured, are listened on at start).
    host.fronts.takeTls(front.takeTls);
    use('devboxExtensions').onStopped(front.onStopped);
    use('devboxExtensions').onStopped(keys.onStopped);
    return { ssh: { keys, front } };
  },
  routes: (app, s) => app.register(sshRoutes, { keys: s.ssh.keys }),
  close: (s) => s.ssh.front.close(),
};
