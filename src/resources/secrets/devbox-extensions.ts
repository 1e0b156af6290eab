import { ERRORS } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../platform/store/types.js';
import type { CreateResolver, EnvironmentProvider } from '../devboxes/index.js';
import type { SecretService } from './secret-service.js';
import { SqlSecretStore } from './sql-secret-store.js';
import type { SecretBinding } from './types.js';

/** The values one box gets, together: they travel with every command (the kernel takes ~2 MiB of environment). */
export const BOX_SECRETS_MAX_BYTES = 1024 * 1024;

/**
 * What secrets contribute to devboxes. At create, `secrets: {ENV: name or id}` must name secrets of the
 * account (400 naming the variable and the secret otherwise); the bindings are written with the box. At
 * every process start (launch commands, entrypoint, executions, named shells, after resume) the provider
 * reads the bound secrets and opens them: values live only in the spawned process's environment, never in
 * the devbox row. So an updated value reaches every box at its next process start, and a deleted secret's
 * variable is gone from the next one.
 */
export function secretExtensions(secrets: SecretService, store: Store, log: Logger): { resolver: CreateResolver; environment: EnvironmentProvider } {
  const bindings = new SqlSecretStore(store.db);
  return {
    async resolver(accountId, input) {
      const wanted = Object.entries(input.secrets ?? {});
      if (!wanted.length) return undefined;
      const resolved: SecretBinding[] = [];
      let total = 0;
      for (const [envName, ref] of wanted) {
        if (input.environmentVariables && Object.hasOwn(input.environmentVariables, envName)) {
          throw ERRORS.invalid(`secrets.${envName}: ${envName} is also set in environment_variables; a variable takes one value`);
        }
        const found = await secrets.resolve(accountId, ref);
        if (!found) throw ERRORS.invalid(`secrets.${envName}: no secret named ${ref}`);
        resolved.push({ envName, secretId: found.id, ref });
        total += Buffer.byteLength((await secrets.reveal(accountId, found.id)).value);
      }
      if (total > BOX_SECRETS_MAX_BYTES) {
        throw ERRORS.invalid(`secrets: the values together are larger than ${BOX_SECRETS_MAX_BYTES} bytes, more than a process environment holds`);
      }
      return { persist: (tx, devbox) => new SqlSecretStore(tx.db).bind(devbox.id, resolved) };
    },

    // A process never starts without a variable it was bound to, nor with more than an environment holds:
    // the error (naming the variable and the secret, never a value) fails the command, and its stderr says why.
    async environment(devbox) {
      const env: Record<string, string> = {};
      let total = 0;
      for (const { envName, secret } of await bindings.boundSecrets(devbox.id)) {
        try {
          env[envName] = secrets.open(secret);
        } catch (err) {
          log.error({ devbox: devbox.id, env: envName, err: (err as Error).message }, 'a bound secret does not open: the command is not started');
          throw ERRORS.unavailable(`secrets.${envName}: ${(err as Error).message}; the command was not started`);
        }
        total += Buffer.byteLength(env[envName]!);
      }
      if (total > BOX_SECRETS_MAX_BYTES) {
        throw ERRORS.invalid(
          `secrets: the values bound to this box are ${total} bytes together, more than ${BOX_SECRETS_MAX_BYTES} (what a process environment holds); the command was not started: shorten a secret or bind fewer`,
        );
      }
      return env;
    },
  };
}
