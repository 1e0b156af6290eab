import type { Module } from '../../host.js';
import { devboxesModule } from '../devboxes/index.js';
import { secretExtensions } from './devbox-extensions.js';
import { secretRoutes } from './routes/index.js';
import { SECRET_COMMANDS } from './commands.js';
import { SECRETS_SEALED } from './rotate-key.js';
import { SECRETS_SCHEMA } from './schema.js';
import { SecretService } from './secret-service.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    secrets: SecretService;
  }
}

/** Secrets, sealed under the master key, and the environment variables boxes get from them. */
export const secretsModule: Module = {
  name: 'secrets',
  needs: [devboxesModule],
  schema: SECRETS_SCHEMA,
  sealed: SECRETS_SEALED,
  async build({ host, use, log }) {
    const secrets = new SecretService(host.store, host.sealer, log);
    // A master key that opens none of the stored values stops the start here, not at the first box.
    await secrets.checkKeys();
    const forBoxes = secretExtensions(secrets, host.store, log);
    use('devboxExtensions').resolver(forBoxes.resolver);
    use('devboxExtensions').environment(forBoxes.environment);
    return { secrets };
  },
  routes: (app, s) => app.register(secretRoutes, { secrets: s.secrets }),
  commands: SECRET_COMMANDS,
};
