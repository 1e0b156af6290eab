export { sshRoutes } from './routes/index.js';
export { devboxOfServerName } from './host-name.js';
export { SshFront, type SshAddresses } from './ssh-front.js';
export { SshKeyService } from './ssh-key-service.js';
export { LoginGuard } from './login-guard.js';
export { SSH_KEYS_SCHEMA } from './schema.js';
export { SqlSshKeyStore } from './sql-ssh-key-store.js';
export { sshModule } from './module.js';
