export { sshRoutes } from './routes/index.js';
export { SshFront, type SshAddresses } from './ssh-front.js';
export { SshKeyService } from './ssh-key-service.js';
export { LoginGuard } from './login-guard.js';
