import { Type } from 'typebox';
import { resourceModule } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import type { SshKeyService } from '../ssh-key-service.js';
import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

export interface SshRouteOptions {
  keys: SshKeyService;
}

const SshKeySchema = Type.Object(
  {
    id: Type.String(),
    ssh_private_key: Type.String({ description: 'OpenSSH private key (PEM armour), ed25519; shown once, kept nowhere' }),
    ssh_user: Type.String({ description: 'the box user the key logs in as' }),
    url: Type.String({ description: 'host name of the box on the SSH front: the TLS server name (`openssl s_client -servername`)' }),
  },
  { title: 'DevboxCreateSSHKeyResponse', description: 'a key pair for the box: the private key, shown once' },
);

/** create_ssh_key in the API reference (/docs). */
const operations: OperationDocs = {
  tag: 'SSH',
  operations: {
    'POST /v1/devboxes/{id}/create_ssh_key': {
      sdk: ['devboxes.createSSHKey'],
      summary: 'Create an SSH key for a devbox',
      description:
        "A new ed25519 key pair that logs in to this box only, as its user, on the server's SSH ports; the private key is shown once and " +
        'kept nowhere. A box that is not running is a 400.',
    },
  },
};

/** create_ssh_key; the connections themselves go to the SSH front (its own ports). */
export const sshRoutes = resourceModule('RESOURCE_TYPE_DEVBOXES', operations, (app, opts: SshRouteOptions) => {
  // A retried x-request-id answers the same pair: the answer (a private key) is kept sealed for the window.
  app.post(
    '/v1/devboxes/:id/create_ssh_key',
    { schema: { params: DevboxIdParams, response: replies(SshKeySchema) }, config: { idempotent: 'sealed' } },
    async (req) => {
      const k = await opts.keys.create(req.principal.accountId, req.params.id, req.host);
      return { id: k.devboxId, ssh_private_key: k.privateKey, ssh_user: k.user, url: k.url };
    },
  );
});
