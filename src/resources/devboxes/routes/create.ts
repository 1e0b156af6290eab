import type { DevboxService } from '../devbox-service.js';
import type { Devbox } from '../types.js';
import { fromPeer } from '../../../platform/http/peers.js';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { replies } from '../../../platform/http/schemas/common.js';
import { mountsOf } from './mounts.js';
import { CreateBodySchema, DevboxViewSchema, refuseUnsupported, view, type CreateBody } from './schemas.js';

/** How long create_and_await_running holds before answering with the current view (the SDK then polls). */
const AWAIT_RUNNING_MS = 20_000;

function toInput(b: CreateBody) {
  refuseUnsupported(b);
  const mounts = mountsOf(b);
  return {
    name: b.name,
    metadata: b.metadata,
    environmentVariables: b.environment_variables,
    secrets: b.secrets,
    entrypoint: b.entrypoint,
    launchParameters: b.launch_parameters,
    snapshotId: b.snapshot_id,
    blueprintId: b.blueprint_id,
    blueprintName: b.blueprint_name,
    fileMounts: mounts.fileMounts,
    objectMounts: mounts.objectMounts,
    codeMounts: mounts.codeMounts,
    agentMounts: mounts.agentMounts,
    brokerMounts: mounts.brokerMounts,
    mcp: b.mcp && Object.fromEntries(Object.entries(b.mcp).map(([env, m]) => [env, { mcpConfig: m.mcp_config, secret: m.secret }])),
    gateways: b.gateways,
    tunnel: b.tunnel && { authMode: b.tunnel.auth_mode, httpKeepAlive: b.tunnel.http_keep_alive, wakeOnHttp: b.tunnel.wake_on_http },
  };
}

const schema = { body: CreateBodySchema, response: replies(DevboxViewSchema) };

export function createRoutes(app: Api, devboxes: DevboxService): void {
  app.post('/v1/devboxes', { schema }, async (req) => {
    return view(devboxes, await devboxes.create(req.principal.accountId, toInput(req.body ?? {}), { place: !fromPeer(req.raw) }));
  });

  // Always 200 with the current view: a 408 here would make the SDK retry, i.e. create again.
  app.post('/v1/devboxes/create_and_await_running', { schema }, async (req, reply) => {
    const accountId = req.principal.accountId;
    const created = await devboxes.create(accountId, toInput(req.body ?? {}), { place: !fromPeer(req.raw) });
    const reached: Devbox | null = await devboxes.waitForStatus(
      accountId,
      created.id,
      ['running', 'failure', 'shutdown', 'suspended'],
      AWAIT_RUNNING_MS,
      clientGone(reply),
    );
    return view(devboxes, reached ?? (await devboxes.get(accountId, created.id)));
  });
}
